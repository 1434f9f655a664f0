"""Every Python sample in the README runs, in order, and its assertions hold."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_samples() -> None:
    assert len(python_blocks()) >= 4


def test_readme_samples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # The samples import only the installed package (toolcards.examples included), never the
    # repository's root: scripts/wheel_check.py runs them against the built wheel too.
    # A real module, so pydantic can resolve the samples' annotations.
    module = types.ModuleType("readme_samples")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for index, block in enumerate(python_blocks()):
        code = compile(block, f"README.md[python block {index}]", "exec")
        exec(code, module.__dict__)
