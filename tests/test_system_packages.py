"""``scripts/system_packages.sh`` (run by ``make test`` and CI) and the Makefile's word on ``make venv``."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "system_packages.sh"


def test_without_root_the_missing_packages_are_named_in_one_line(tmp_path: Path) -> None:
    # A PATH holding only an `id` that says "not root": every tool looks missing, and
    # apt-get is neither found nor tried.
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "id").write_text("#!/bin/sh\necho 1000\n")
    (shims / "id").chmod(0o755)

    done = subprocess.run(
        ["/bin/bash", str(SCRIPT)], env={"PATH": str(shims)}, capture_output=True, text=True, timeout=60, check=False
    )

    assert done.returncode == 0, done.stderr  # never fails: the tests that need a package skip
    (line,) = done.stdout.splitlines()
    assert line.startswith("note: missing system packages bubblewrap ripgrep make chromium")
    assert "apt-get install" in line and "skipped" in line


def test_make_test_runs_it_and_make_help_names_make_venv() -> None:
    dry_run = subprocess.run(
        ["make", "-n", "test"], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    ).stdout
    assert "scripts/system_packages.sh" in dry_run
    helped = subprocess.run(["make", "help"], cwd=REPO, capture_output=True, text=True, timeout=60, check=True).stdout
    assert "make venv" in helped and "only the environment" in helped
    ci = REPO / ".ci" / "run"  # not in the sdist
    assert not ci.exists() or "scripts/system_packages.sh" in ci.read_text()
