"""What only some workspace calls need is imported by those calls.

A fresh interpreter binds the workspace card, writes, reads and lists: grep, the search
index (with its file watch), patches, edits and undos stay unloaded. The first grep loads
the index, and the next grep still finds a file written after it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

LAZY = [
    "toolcards.workspace._edit",
    "toolcards.workspace._grep",
    "toolcards.workspace._index",
    "toolcards.workspace._literals",
    "toolcards.workspace._patch",
    "toolcards.workspace._undo",
    "toolcards.workspace._watch",
]

SCRIPT = f"""
import json, sys
from toolcards import ToolFactory
from toolcards.core._channels import TOOL_CALL
from toolcards.testing import FakeObserver
from toolcards.workspace import WorkspaceTool

lazy = {LAZY!r}
observer = FakeObserver("Ann", "team")
tools = {{tool.name: tool for tool in ToolFactory([WorkspaceTool()], observer=observer).tools()}}
call = lambda name, **args: str(tools[name].call_sync(args, channel=TOOL_CALL))
call("workspace_write", path="a.txt", content="alpha\\n")
call("workspace_read", path="a.txt")
call("workspace_list")
after_reads = [name for name in lazy if name in sys.modules]
first = call("workspace_grep", pattern="alpha")
call("workspace_write", path="b.txt", content="alpha beta\\n")
second = call("workspace_grep", pattern="beta")
print(json.dumps({{"after_reads": after_reads, "index": "toolcards.workspace._index" in sys.modules,
                  "first": first, "second": second}}))
observer.close()
"""


def test_reads_and_writes_load_no_grep_index_patch_or_undo(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TOOLCARDS_WORKSPACES_ROOT": str(tmp_path)},
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["after_reads"] == []
    assert seen["index"]
    assert "a.txt" in seen["first"]
    assert "b.txt" in seen["second"]
