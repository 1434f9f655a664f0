"""``workspace_info``: what a path is, from one ``lstat`` and, for a small text file, its lines."""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.workspace.hostile import CheckedAgent
from tests.workspace.test_journal import plain
from toolcards import ToolFactory
from toolcards.testing import FakeObserver
from toolcards.workspace._info import MAX_COUNTED_BYTES
from toolcards.workspace._tool import WorkspaceTool


def info(a: CheckedAgent, path: str) -> dict[str, str]:
    text = plain(a("workspace_info", path=path))
    return dict(line.split(": ", 1) for line in text.split("\n"))


def test_a_text_file(a: CheckedAgent) -> None:
    a("workspace_write", path="src/app.py", content="one\ntwo\nthree")
    mtime = 1_700_000_000
    os.utime(a.root / "src/app.py", (mtime, mtime))
    os.chmod(a.root / "src/app.py", 0o640)
    found = info(a, "src/app.py")
    assert found["path"] == "src/app.py" and found["kind"] == "file"
    assert found["size"] == "13 bytes" and found["lines"] == "3"
    assert found["type"] == "text/x-python (text)"
    assert found["modified"] == "2023-11-14T22:13:20Z"
    assert found["permissions"] == "rw-r----- (640)"
    if "created" in found:  # where the file system records it
        created = datetime.fromisoformat(found["created"].replace("Z", "+00:00"))
        assert abs(created.timestamp() - time.time()) < 3600
        assert created.tzinfo == UTC


def test_a_binary_file_a_large_file_and_an_unknown_name(a: CheckedAgent) -> None:
    (a.root / "blob").write_bytes(b"\x00\x01\x02" * 700)
    found = info(a, "blob")
    assert found["size"] == "2,100 bytes (2.1 KB)" and found["type"] == "application/octet-stream (binary)"
    assert "lines" not in found
    (a.root / "big.txt").write_bytes(b"x\n" * (MAX_COUNTED_BYTES // 2 + 1))
    found = info(a, "big.txt")
    assert "lines" not in found and found["type"] == "text/plain"
    (a.root / "README").write_text("hello\n")
    assert info(a, "README")["type"] == "text/plain (text)"


def test_directories_and_links(a: CheckedAgent) -> None:
    a("workspace_write", path="d/one.txt", content="1\n")
    a("workspace_write", path="d/two.txt", content="2\n")
    os.symlink("d/one.txt", a.root / "to-file")
    os.symlink("d", a.root / "to-dir")
    os.symlink("/etc/passwd", a.root / "out")
    os.symlink("gone", a.root / "broken")
    assert info(a, "d")["entries"] == "2" and info(a, "d")["kind"] == "directory"
    assert info(a, "")["path"] == "."
    assert info(a, "to-file") | {"modified": "", "created": "", "permissions": ""} == {
        "path": "to-file",
        "kind": "symlink",
        "target": "d/one.txt",
        "modified": "",
        "created": "",
        "permissions": "",
    }
    assert info(a, "to-dir")["target"] == "d/"
    assert info(a, "out")["target"] == "outside the workspace, or a loop (not followed)"
    assert info(a, "broken")["target"] == "missing (a broken link)"
    os.mkfifo(a.root / "pipe")
    assert info(a, "pipe")["kind"] == "named pipe"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("missing.txt", "Nothing is at 'missing.txt'. Call workspace_glob to find the right path."),
        ("../secret", "path escapes the workspace root"),
        ("/etc/passwd", "path escapes the workspace root"),
    ],
)
def test_bad_paths_are_refused_in_words(a: CheckedAgent, path: str, expected: str) -> None:
    _, message = a.attempt("workspace_info", path=path)
    assert message is not None and expected in message


def test_a_model_asks_about_a_file(alice: FakeObserver) -> None:
    factory = ToolFactory([WorkspaceTool()], observer=alice)
    root: Path = factory.cards[0].root  # type: ignore[attr-defined]
    (root / "notes.md").write_text("# Notes\n\nhello\n")
    seen: list[ToolReturnPart] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.extend(p for p in messages[-1].parts if isinstance(p, ToolReturnPart))
        if not seen:
            return ModelResponse(parts=[ToolCallPart("workspace_info", {"path": "notes.md"})])
        return ModelResponse(parts=[TextPart("done")])

    Agent(FunctionModel(respond), toolsets=[factory.toolset()]).run_sync("how long are the notes?")
    text = plain(str(seen[0].content))
    assert re.search(r"^lines: 3$", text, re.MULTILINE) and "type: text/markdown (text)" in text
