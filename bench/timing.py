"""Measuring: medians of repeated calls, with warm-up."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_ms(func: Callable[[], Any], *, repeat: int = 1000, warmup: int = 50) -> float:
    """The median wall time of ``func()`` in milliseconds."""
    for _ in range(warmup):
        func()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000.0
