"""Bounded arguments, bounded files: clear refusals instead of unbounded work or memory."""

from __future__ import annotations

import json

import pytest

from tests.workspace.hostile import MESSAGES, CheckedAgent
from toolcards import TOOL_CALL
from toolcards.workspace._actor import MAX_EDIT_BYTES
from toolcards.workspace._models import (
    MAX_CONTENT_CHARS,
    MAX_EDIT_STRING_CHARS,
    MAX_EDITS,
    MAX_PATCH_CHARS,
    MAX_PATH_CHARS,
    MAX_PATTERN_CHARS,
)


@pytest.mark.parametrize(
    ("tool", "args", "limit"),
    [
        ("workspace_read", {"path": "x" * (MAX_PATH_CHARS + 1)}, MAX_PATH_CHARS),
        ("workspace_list", {"path": "x" * (MAX_PATH_CHARS + 1)}, MAX_PATH_CHARS),
        ("workspace_view", {"path": "x" * (MAX_PATH_CHARS + 1)}, MAX_PATH_CHARS),
        ("workspace_delete", {"path": "x" * (MAX_PATH_CHARS + 1)}, MAX_PATH_CHARS),
        ("workspace_mkdir", {"path": "x" * (MAX_PATH_CHARS + 1)}, MAX_PATH_CHARS),
        ("workspace_rmdir", {"path": "x" * (MAX_PATH_CHARS + 1)}, MAX_PATH_CHARS),
        ("workspace_write", {"path": "f.txt", "content": "x" * (MAX_CONTENT_CHARS + 1)}, MAX_CONTENT_CHARS),
        (
            "workspace_edit",
            {"path": "f.txt", "old_string": "x" * (MAX_EDIT_STRING_CHARS + 1), "new_string": "y"},
            MAX_EDIT_STRING_CHARS,
        ),
        (
            "workspace_edit",
            {"path": "f.txt", "old_string": "x", "new_string": "y" * (MAX_EDIT_STRING_CHARS + 1)},
            MAX_EDIT_STRING_CHARS,
        ),
        ("workspace_patch", {"patch_text": "x" * (MAX_PATCH_CHARS + 1)}, MAX_PATCH_CHARS),
        ("workspace_glob", {"pattern": "{" * (MAX_PATTERN_CHARS + 1)}, MAX_PATTERN_CHARS),
        ("workspace_grep", {"pattern": "a" * (MAX_PATTERN_CHARS + 1)}, MAX_PATTERN_CHARS),
        ("workspace_grep", {"pattern": "a", "include": "{" * (MAX_PATTERN_CHARS + 1)}, MAX_PATTERN_CHARS),
        ("workspace_glob", {"pattern": "*", "path": "x" * (MAX_PATH_CHARS + 1)}, MAX_PATH_CHARS),
    ],
)
def test_arguments_past_their_bound_get_a_clear_error(
    a: CheckedAgent, tool: str, args: dict[str, object], limit: int
) -> None:
    message = a.refused(tool, **args)
    assert message.startswith(f"Invalid arguments for {tool}: ")
    assert f"at most {limit} characters" in message
    assert len(message) < 2000  # the argument is not echoed back whole


def test_multi_edit_is_bounded_in_count_and_in_size(a: CheckedAgent) -> None:
    edit = {"path": "f.txt", "old_string": "a", "new_string": "b"}
    message = a.refused("workspace_multi_edit", edits=[edit] * (MAX_EDITS + 1))
    assert f"at most {MAX_EDITS} items" in message
    nested = {"path": "f.txt", "old_string": "x" * (MAX_EDIT_STRING_CHARS + 1), "new_string": "y"}
    assert "at most" in a.refused("workspace_multi_edit", edits=[nested])
    big = {"path": "f.txt", "old_string": "x" * MAX_EDIT_STRING_CHARS, "new_string": "y" * MAX_EDIT_STRING_CHARS}
    message = a.refused("workspace_multi_edit", edits=[big, big, big])
    assert "Split them into several calls" in message


def test_the_bounds_cost_no_tokens(a: CheckedAgent) -> None:
    schemas = json.dumps([tool.parameters_schema for tool in a.tools.values()])
    assert "maxLength" not in schemas and "maxItems" not in schemas


def test_a_file_too_large_to_change_is_refused_without_being_loaded(a: CheckedAgent) -> None:
    with open(a.root / "huge.log", "wb") as handle:
        handle.truncate(MAX_EDIT_BYTES + 1)  # sparse: nothing is written, and nothing must be read
    for tool, args in [
        ("workspace_edit", {"old_string": "a", "new_string": "b"}),
        ("workspace_write", {"content": "short\n"}),
        ("workspace_multi_edit", {}),
    ]:
        if tool == "workspace_multi_edit":
            message = a.refused(tool, edits=[{"path": "huge.log", "old_string": "a", "new_string": "b"}])
        else:
            message = a.refused(tool, path="huge.log", **args)
        assert "'huge.log' is 16.0 MB (16,777,217 bytes), more than the 16.0 MB this tool handles" in message
        assert "delete it with workspace_delete and write it anew" in message
    patch = "--- a/huge.log\n+++ b/huge.log\n@@ -1 +1 @@\n-a\n+b\n"
    assert "more than the 16.0 MB" in a.refused("workspace_patch", patch_text=patch)
    assert a("workspace_delete", path="huge.log") == "Deleted huge.log."


def test_a_page_of_a_large_file_is_read_and_recorded(a: CheckedAgent) -> None:
    lines = [f"line {n}" for n in range(1, 400_001)]
    (a.root / "big.txt").write_text("\n".join(lines) + "\n")
    page = a.tools["workspace_read"].call_sync({"path": "big.txt", "offset": 200_000, "limit": 3}, channel=TOOL_CALL)
    assert "200000\tline 200000" in page and "(showing lines 200000-200002 of 400000" in page
    result = a("workspace_edit", path="big.txt", old_string="line 200001\n", new_string="line 200001 changed\n")
    assert result.startswith("Edited big.txt (1 place).")


def test_no_message_named_a_host_path() -> None:
    """Every refusal the hardening tests received was checked when it came; here, they exist."""
    assert MESSAGES
