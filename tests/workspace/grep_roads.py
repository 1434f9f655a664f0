"""grep's two roads, for tests that hold both to one answer: ripgrep alone, and narrowed by a
ready workspace index (where Python's ``re`` confirms the few small candidates it surely reads
as ripgrep does, and ripgrep the rest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolcards.workspace._grep import grep
from toolcards.workspace._index import WorkspaceIndex

__all__ = ["ROADS", "close_indexes", "search"]

ROADS = [pytest.param(False, id="ripgrep"), pytest.param(True, id="indexed")]

_indexes: dict[Path, WorkspaceIndex] = {}


def search(root: Path, *args: Any, indexed: bool, **options: Any) -> str:
    """``grep`` by ripgrep alone, or through a ready index of ``root`` (built once per root)."""
    if not indexed:
        return grep(root, *args, **options)
    if root not in _indexes:
        _indexes[root] = WorkspaceIndex(root)
        assert _indexes[root].wait_ready(timeout=60)
    return grep(root, *args, index=_indexes[root], **options)


def close_indexes() -> None:
    """Stop every index :func:`search` built."""
    for index in _indexes.values():
        index.close()
    _indexes.clear()
