"""The limits of a grep: how much it accepts, collects, shows and reads."""

from __future__ import annotations

__all__ = [
    "MAX_GREP_COLLECTED",
    "MAX_GREP_LINE_CHARS",
    "MAX_GREP_OUTPUT_BYTES",
    "MAX_GREP_PATTERN_CHARS",
    "MAX_GREP_RESULTS",
    "RG_TIMEOUT_S",
]

MAX_GREP_RESULTS = 100
"""How many matching lines :func:`grep` returns at most."""


MAX_GREP_LINE_CHARS = 300
"""A matching line longer than this is shown as a window of this many characters around its match."""


MAX_GREP_COLLECTED = 20_000
"""Past this many matching lines the search is refused as too broad."""


MAX_GREP_PATTERN_CHARS = 1_000
"""The longest regular expression accepted."""


MAX_GREP_OUTPUT_BYTES = 8 * 1024 * 1024
"""How much of ripgrep's output is read; past this the search stops and says the results were cut."""


RG_TIMEOUT_S = 30.0
"""Ripgrep is killed after this many seconds."""
