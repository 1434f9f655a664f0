"""Skill folders for the tests: the ones under ``data/`` (written in the public format), copied
where a test may change them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).with_name("data")
NAMES = ["api-deprecation", "csv-cleanup", "incident-review", "release-notes"]


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    """A copy of the test skills a test may edit."""
    target = tmp_path / "skills"
    shutil.copytree(DATA, target)
    return target


def write_skill(folder: Path, name: str, description: str, body: str = "Do it.", *, front: str | None = None) -> Path:
    """A skill folder ``folder/name`` with a ``SKILL.md``; ``front`` replaces the front matter's lines."""
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    lines = front if front is not None else f"name: {name}\ndescription: {description}"
    (path / "SKILL.md").write_text(f"---\n{lines}\n---\n{body}\n")
    return path
