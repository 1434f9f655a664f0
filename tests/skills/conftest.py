"""Skill folders for the tests: the ones under ``data/`` (written in the public format), copied
where a test may change them."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

DATA = Path(__file__).with_name("data")
NAMES = ["api-deprecation", "csv-cleanup", "incident-review", "release-notes"]
RESCUE_AFTER_S = 3.0
"""How long :func:`rescued` lets a reader wait on a named pipe before it opens the other end."""


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


@contextmanager
def rescued(fifo: Path) -> Iterator[list[str]]:
    """Run the ``with`` body; should it get stuck opening the named pipe ``fifo`` for reading,
    a writer opens and closes the pipe every few seconds (its reader then reads an empty file),
    so a test that meets the hang fails instead of hanging the run. Yields the list that
    records each rescue: a test asserts it stayed empty."""
    done = threading.Event()
    rescues: list[str] = []

    def rescue() -> None:
        while not done.wait(RESCUE_AFTER_S):
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # nobody is opening it to read: nothing is stuck on it
                continue
            rescues.append(str(fifo))
            os.close(fd)

    thread = threading.Thread(target=rescue, name="fifo-rescue", daemon=True)
    thread.start()
    try:
        yield rescues
    finally:
        done.set()
        thread.join()
