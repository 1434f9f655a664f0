"""Exactly-once mutating calls: the idempotency key a call carries into the state it changes.

A client that did not hear an answer (a lost connection, a crash, a durable workflow
executing a step again) sends the same call again. When a call comes with a key of its
client — pydantic-ai's run id and tool-call id, an MCP client's ``_meta`` key or its HTTP
session and request id, a command's ``idempotency_key`` — the pipeline makes it the current
call's :class:`CallKey` while the handler runs. A handler whose actor writes the team's
store passes :func:`current_call` along; the actor records the key and its answer in the
same transaction as the change (:class:`toolcards.store.CallLog`), so a retry with the
same key gets the first answer back instead of writing again, whichever process it reaches.

A call without a client key cannot be retried as the same call, so nothing is recorded for
it. The key is scoped by the member and the tool, and the arguments' digest travels with
it: the same key with other arguments is a client's mistake, refused, never answered with
the other call's result.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import pydantic_core

__all__ = ["CallKey", "call_key", "calling", "current_call"]

MAX_CLIENT_KEY_CHARS = 200
"""Longer client keys are hashed: a key is stored with every change it made."""


@dataclass(frozen=True, slots=True)
class CallKey:
    """The identity of one mutating call, as its client would send it again."""

    key: str
    """``"<member>|<tool>|<client key>"``: unique per member and tool."""
    digest: str
    """A digest of the call's arguments: the same key with other arguments is another call."""


_current: ContextVar[CallKey | None] = ContextVar("toolcards_call_key", default=None)


def current_call() -> CallKey | None:
    """The key of the mutating call running in this context, or ``None`` when it has none."""
    return _current.get()


@contextlib.contextmanager
def calling(key: CallKey | None) -> Iterator[None]:
    """Run the ``with`` block as the call ``key`` (``None``: a call without a key)."""
    token = _current.set(key)
    try:
        yield
    finally:
        _current.reset(token)


def call_key(member: str | None, tool: str, client_key: str, arguments: Mapping[str, Any]) -> CallKey:
    """The :class:`CallKey` of ``tool`` called by ``member`` with ``client_key`` and ``arguments``.

    ``arguments`` are the validated arguments the handler gets (every parameter, in the
    signature's order), so two spellings of one call (a default given or left out, a number
    as text) have one digest.
    """
    if len(client_key) > MAX_CLIENT_KEY_CHARS:
        client_key = "sha256:" + hashlib.sha256(client_key.encode("utf-8", "surrogatepass")).hexdigest()
    text = pydantic_core.to_json(arguments, fallback=repr)
    digest = hashlib.blake2b(text, digest_size=12).hexdigest()
    return CallKey(key=f"{member or ''}|{tool}|{client_key}", digest=digest)
