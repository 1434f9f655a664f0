"""Whether a roster entry can become a pydantic-ai model: one road for the bind, the switch and
every request.

* :func:`model_string_problem` asks whether pydantic-ai knows a model string at all: ``"test"``,
  or ``provider:model`` with a provider it has. This is pydantic-ai's own check, and nothing is
  built, so no API key is needed yet (one may be set later). It runs when the card is bound,
  where an unknown provider is a configuration mistake. A string with no provider (``"quick"``)
  is not judged there, because it may name a model that the agent's host registers (a team
  runtime's ``models=``), and only the host knows those.
* :func:`build_model` builds the model a request would run on, now: first the host's resolver,
  then pydantic-ai, which reads API keys and imports the provider's package. It runs when a
  member switches and before every request. Whatever stops it becomes a
  :class:`ModelUnavailable` whose message says why in a sentence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ModelUnavailable", "build_model", "model_string_problem", "names_a_host_model"]

_REASON_MAX = 240


class ModelUnavailable(Exception):
    """A roster entry cannot be built into a model now; the message says why, in one sentence.

    The card turns it into what its reader acts on: a refused switch (``RetriableError``) or a
    note in the context. It never leaves the package.
    """


def names_a_host_model(model: str) -> bool:
    """Whether ``model`` has no provider prefix and is not pydantic-ai's ``"test"``, so that
    only the agent's host can say what it names."""
    return ":" not in model and model != "test"


def model_string_problem(model: str) -> str | None:
    """What pydantic-ai does not know about the model string ``model``, or ``None``.

    ``None`` also for a string without a provider (:func:`names_a_host_model`), and for a known
    provider whose package is not installed: :func:`build_model` says so when it is used.
    """
    if ":" not in model:
        return None  # "test", or a name only the host knows
    from pydantic_ai.models import parse_model_id
    from pydantic_ai.providers import infer_provider_class

    provider, name = parse_model_id(model)
    if not name.strip():
        return f"it names no model after the provider {provider!r}"
    try:
        infer_provider_class(provider or "")
    except ValueError:
        return f"pydantic-ai has no provider {provider!r}"
    except ImportError:
        pass  # a provider it has, whose package is missing here
    return None


def build_model(value: Any, resolve: Callable[[Any], Any] | None = None) -> Any:
    """The pydantic-ai model ``value`` (a model string, or what a factory returned) runs on,
    built now: through ``resolve`` first (the host's names) when given, then pydantic-ai's
    ``infer_model``, just as a request would.

    Raises:
        ModelUnavailable: it cannot be built now. Examples are an unknown model, a missing API
            key or provider package, or a resolver that failed.
    """
    from pydantic_ai.models import infer_model

    try:
        return infer_model(resolve(value) if resolve is not None else value)
    except Exception as exc:
        raise ModelUnavailable(_first_sentence(str(exc)) or type(exc).__name__) from exc


def _first_sentence(text: str) -> str:
    # pydantic-ai's messages go on to suggest the test model, which is no use to a member
    # picking from its roster, and the reason is read before every request while it lasts.
    first = " ".join(text.split()).split(". ", 1)[0].rstrip(".")
    return first if len(first) <= _REASON_MAX else first[: _REASON_MAX - 1].rstrip() + "…"
