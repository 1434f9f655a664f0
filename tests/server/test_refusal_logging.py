"""A real ``toolcards serve`` under contention, refusing most calls as it should: its stderr
holds no traceback and none of the file text or arguments the refusals quote.

Several MCP clients, each its own agent, edit one shared file at once (most edits are stale),
edit it with old text that is not there, and ask for tasks that do not exist, for a few
seconds (``bench/refusals.py``; ``python -m bench refusals`` runs the same for 60 s).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.refusals import SECRET, serve_and_contend

pytestmark = pytest.mark.slow

CONTEND_S = 4.0


def test_refusals_under_contention_leave_no_traceback_and_no_file_text_on_stderr(tmp_path: Path) -> None:
    counts = serve_and_contend(tmp_path, CONTEND_S)
    # Every kind of refusal happened (the machine's speed decides how often).
    assert counts.stale and counts.unmatched and counts.unknown, counts
    assert "Traceback" not in counts.stderr
    assert SECRET not in counts.stderr
    assert "returned" not in counts.stderr and "RetriableError" not in counts.stderr
    assert "toolcards: serving team refusals at" in counts.stderr and "toolcards: stopped" in counts.stderr
