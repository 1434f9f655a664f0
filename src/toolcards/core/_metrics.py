"""OpenTelemetry metrics of the ledger: calls, tokens and time per member, card, tool and task.

When the application configures a meter provider (``metrics.set_meter_provider``, Logfire's
``configure()``, ...), every call the ledger writes (:mod:`toolcards.store._ledger`) is added
to four instruments of the meter ``toolcards``:

* ``toolcards.tool.calls`` (counter, ``{call}``);
* ``toolcards.tool.argument_tokens`` and ``toolcards.tool.result_tokens`` (counters, ``{token}``);
* ``toolcards.tool.duration`` (histogram, ``s``).

Attributes: ``gen_ai.tool.name``, ``gen_ai.agent.name`` (without its ``@``),
``toolcards.card``, ``toolcards.team``, ``toolcards.task`` (the claimed task's id, absent
without one) and ``toolcards.failed``. They are recorded by the ledger's writer thread with
the counted tokens, never on the call's path. Nothing here imports OpenTelemetry: without
``opentelemetry.metrics`` imported and a provider set, :func:`record_calls` costs a
dictionary lookup per batch.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["METER_NAME", "record_calls"]

METER_NAME = "toolcards"
"""The instrumentation scope of the metrics."""

_instruments_of: tuple[Any, Any] = (None, None)
"""The last provider instruments were made for, and those instruments."""


def record_calls(team_id: str, batch: Sequence[tuple[Any, ...]], tokens: Sequence[int]) -> None:
    """Add a batch of the ledger's calls to the metrics, if a meter provider is configured.

    ``batch`` holds the ledger's entries (at, member, task, card, tool, arguments, result,
    seconds, failed) and ``tokens`` their argument and result tokens, two per entry.
    """
    metrics = sys.modules.get("opentelemetry.metrics")
    if metrics is None:
        return
    instruments = _instruments(metrics)
    if instruments is None:
        return
    calls, argument_tokens, result_tokens, duration = instruments
    for index, (_at, member, task, card, tool, _arguments, _result, seconds, failed) in enumerate(batch):
        attributes: dict[str, str | int | bool] = {
            "gen_ai.tool.name": tool,
            "toolcards.card": card,
            "toolcards.team": team_id,
            "toolcards.failed": bool(failed),
        }
        if member:
            attributes["gen_ai.agent.name"] = member.lstrip("@")
        if task is not None:
            attributes["toolcards.task"] = task
        calls.add(1, attributes)
        argument_tokens.add(tokens[2 * index], attributes)
        result_tokens.add(tokens[2 * index + 1], attributes)
        duration.record(seconds, attributes)


def _instruments(metrics: Any) -> tuple[Any, Any, Any, Any] | None:
    global _instruments_of
    provider = metrics.get_meter_provider()
    if isinstance(provider, metrics.NoOpMeterProvider) or type(provider).__name__ == "_ProxyMeterProvider":
        return None  # no provider configured: nothing would be exported
    known, instruments = _instruments_of
    if provider is not known:
        meter = provider.get_meter(METER_NAME)
        instruments = (
            meter.create_counter("toolcards.tool.calls", unit="{call}", description="Tool calls"),
            meter.create_counter("toolcards.tool.argument_tokens", unit="{token}", description="Argument tokens"),
            meter.create_counter("toolcards.tool.result_tokens", unit="{token}", description="Result tokens"),
            meter.create_histogram("toolcards.tool.duration", unit="s", description="Tool time"),
        )
        _instruments_of = (provider, instruments)
    result: tuple[Any, Any, Any, Any] = instruments
    return result
