"""Measuring and reporting: samples with warm-up, their median and tail, and the row a case reports.

A benchmark module's ``run()`` returns :class:`Case` rows. A case carries its value in its
own unit (milliseconds unless it says otherwise: tokens, percent, operations per second, a
growth exponent), its 95th percentile when it was sampled, and, when the project set one,
its target and which way is better; the table then says whether the target was met.
A module that cannot run here (a server, a binary or a model is missing) raises :class:`Skip`.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal

__all__ = ["Case", "Skip", "Stats", "measure", "median_ms", "percentile"]

NAN = math.nan


class Skip(Exception):
    """Raised by a module's ``run()`` when something it needs is absent; the message says what."""


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of ``samples`` (``fraction`` 0.95 for p95); NaN when empty."""
    if not samples:
        return NAN
    ordered = sorted(samples)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True, kw_only=True, slots=True)
class Stats:
    """Summary of timed samples, in milliseconds."""

    median: float
    p95: float
    p99: float
    count: int

    @classmethod
    def of(cls, samples_ms: Sequence[float]) -> Stats:
        """The statistics of ``samples_ms`` (milliseconds); NaN for an empty list."""
        if not samples_ms:
            return cls(median=NAN, p95=NAN, p99=NAN, count=0)
        return cls(
            median=statistics.median(samples_ms),
            p95=percentile(samples_ms, 0.95),
            p99=percentile(samples_ms, 0.99),
            count=len(samples_ms),
        )


def measure(
    func: Callable[[], Any],
    *,
    repeat: int = 1000,
    warmup: int = 50,
    budget_s: float | None = None,
    undo: Callable[[], Any] | None = None,
) -> Stats:
    """Time ``func()`` ``repeat`` times after ``warmup`` untimed calls.

    Args:
        repeat: the number of timed calls.
        warmup: untimed calls first (caches, imports, compiled patterns).
        budget_s: stop early once the timed calls took this long (at least 5 are kept), so
            a slow case does not stretch the run.
        undo: called untimed after each call (e.g. to restore a file an edit changed).
    """
    for _ in range(warmup):
        func()
        if undo is not None:
            undo()
    samples: list[float] = []
    spent = 0.0
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        elapsed = time.perf_counter() - started
        samples.append(elapsed * 1000.0)
        spent += elapsed
        if undo is not None:
            undo()
        if budget_s is not None and spent > budget_s and len(samples) >= 5:
            break
    return Stats.of(samples)


def median_ms(func: Callable[[], Any], *, repeat: int = 1000, warmup: int = 50) -> float:
    """The median wall time of ``func()`` in milliseconds."""
    return measure(func, repeat=repeat, warmup=warmup).median


@dataclass(frozen=True, slots=True)
class Case:
    """One row of the table: what was measured, its value, and its target if it has one.

    ``Case("update 1 task", 0.18, "note", p95=0.4, target=0.3)`` is a time in milliseconds
    that should stay at or under 0.3 ms; ``Case("throughput", 4200.0, unit="ops/s",
    target=2000, better="higher")`` a rate that should reach 2,000.
    """

    label: str
    median: float
    """The measured value in :attr:`unit`: a median for sampled cases, else the one figure."""
    note: str = ""
    _: KW_ONLY
    p95: float = NAN
    """The 95th percentile, in :attr:`unit`; NaN when the case was not sampled."""
    unit: str = "ms"
    """``ms``, or what the value counts: ``tokens``, ``%``, ``ops/s``, ``MB``, ``x`` (a ratio),
    ``""`` (a pure number, such as a growth exponent)."""
    target: float | None = None
    """The value to reach, in :attr:`unit`; ``None`` when the project set none."""
    better: Literal["lower", "higher"] = "lower"

    @classmethod
    def timed(cls, label: str, stats: Stats, note: str = "", *, target: float | None = None) -> Case:
        """A time in milliseconds from :func:`measure`'s statistics."""
        return cls(label, stats.median, note, p95=stats.p95, target=target)

    @classmethod
    def skipped(cls, label: str, why: str) -> Case:
        """A case that could not run here; ``why`` names what is missing."""
        return cls(label, NAN, f"skipped: {why}")

    @property
    def met(self) -> bool | None:
        """Whether the target is met; ``None`` without a target or a value."""
        if self.target is None or math.isnan(self.median):
            return None
        return self.median <= self.target if self.better == "lower" else self.median >= self.target
