"""The official MCP conformance suite and the MCP Inspector's CLI against real ``toolcards serve``
processes, through ``scripts/mcp_conformance.py``: every check the suite makes without its own
fixtures passes, with a token and without, and the Inspector gets every method's answer on stdio
and HTTP in the legacy, auto and pinned 2026-07-28 eras.

The clients come from the npm registry (the script installs them once, in ``.mcp-clients/``);
without npm, or when it cannot reach the registry, the test is skipped and says why.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CANNOT_INSTALL = 3


def test_the_conformance_suite_and_the_inspector_pass(tmp_path: Path) -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: the conformance suite and the Inspector come from the npm registry")
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "mcp_conformance.py"), "--json", str(report)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=3000,
        check=False,
    )
    if done.returncode == CANNOT_INSTALL:
        pytest.skip(done.stderr.strip() or "the MCP clients could not be installed")
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(report.read_text())
    for run, groups in results["conformance"].items():
        assert groups["fixture_free"]["failed"] == 0, (run, groups["fixture_free"]["failures"])
        assert groups["fixture_free"]["passed"] > 0, run
    assert {"0.1.16, token", "0.1.16, no token", "0.2.0-alpha.12, 2026-07-28, token"} <= set(results["conformance"])
    for transport, eras in results["inspector"].items():
        assert set(eras) == {"legacy", "auto", "modern"}, transport
        for era, outcome in eras.items():
            assert outcome["failed"] == 0 and outcome["passed"] >= 7, (transport, era, outcome["failures"])
