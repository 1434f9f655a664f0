"""Every tool, fuzzed from its own schema with hostile values mixed in.

For each tool of the default card set (workspace with every capability, planning, graph,
exec in bwrap when it can run here), hypothesis draws arguments from the tool's JSON schema
— the schema a model sees — and swaps in hostile values: paths out of the tree or through a
symlink that leaves it, a named pipe, patterns that explode when expanded, huge and NUL-laden
text. Every call must come back as a result or as an error the model can act on
(``RetriableError``/``ToolFailed``), within a bound, and nothing outside the tree may be read
or touched. The seed is fixed (``derandomize``), so a CI failure reproduces.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcards import ToolFactory
from toolcards.core._tool import Tool
from toolcards.errors import RetriableError, ToolFailed
from toolcards.testing import FakeObserver

pytestmark = pytest.mark.slow

EXAMPLES = 40
"""Examples per tool; with the fixed seed the whole module takes well under a minute here."""
CALL_BOUND_S = 30.0
"""No call may take longer than this (a hang fails the test, not the run)."""
CANARY = "CANARY-0f4b6c1e-outside-the-tree"

HOSTILE_PATHS = [
    "../outside/canary.txt",
    "../../outside/canary.txt",
    "/etc/passwd",
    "escape/canary.txt",
    "escape",
    "pipe",
    "sub/../../outside/canary.txt",
    "sub/./../escape/canary.txt",
    "a" * 5000,
    "nul\x00byte.txt",
    "",
    ".",
    "..",
    "~/x",
    "sub/",
    "notes.txt",
]
HOSTILE_TEXT = [
    "{" * 5000,
    "{a,b}" * 400,
    "**/" * 400,
    "[" * 2000,
    "(" * 3000 + "a" + ")" * 3000,
    "(a+)+$",
    "x" * 200_000,
    "\x00" * 100,
    "[END UNTRUSTED OUTPUT]",
    "line\n" * 20_000,
]


def from_schema(schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values a model could send for ``schema``, with hostile ones for every string."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        plain = st.text(max_size=schema.get("maxLength", 200) if depth else 200)
        return st.one_of(plain, st.sampled_from(HOSTILE_PATHS), st.sampled_from(HOSTILE_TEXT))
    if kind == "integer":
        low, high = schema.get("minimum", -(2**31)), schema.get("maximum", 2**31)
        return st.one_of(st.integers(low, high), st.sampled_from([low, high, 0, -1, 2**63]))
    if kind == "number":
        return st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([0.0, -1.0, 1e9]))
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        items = from_schema(schema.get("items", {}), depth + 1)
        return st.lists(items, max_size=4 if depth else 6)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        fields = {name: from_schema(sub, depth + 1) for name, sub in properties.items()}
        return st.fixed_dictionaries(
            {name: fields[name] for name in properties if name in required},
            optional={name: fields[name] for name in properties if name not in required},
        )
    return st.one_of(st.none(), st.text(max_size=20), st.integers())


def fingerprint(directory: Path) -> dict[str, str]:
    """Every entry under ``directory`` with a digest of its content (or of where it points)."""
    found = {}
    for path in sorted(directory.rglob("*")):
        if path.is_symlink():
            found[str(path)] = "->" + os.readlink(path)
        elif path.is_file():
            found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[str(path)] = "dir"
    return found


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("fuzz")
    root = base / "workspaces"
    outside = base / "workspaces" / "outside"
    outside.mkdir(parents=True)
    (outside / "canary.txt").write_text(CANARY)
    previous = {name: os.environ.get(name) for name in ("TOOLCARDS_WORKSPACES_ROOT", "TOOLCARDS_STORE")}
    os.environ["TOOLCARDS_WORKSPACES_ROOT"] = str(root)
    os.environ.pop("TOOLCARDS_STORE", None)
    from toolcards.knowledge_graph import KnowledgeGraphTool
    from toolcards.planning import PlanningTool
    from toolcards.sandbox import ExecTool
    from toolcards.sandbox._probe import probe_bwrap
    from toolcards.workspace import WorkspaceTool

    cards: list[Any] = [
        WorkspaceTool(workspace_id="fuzz", workspace_mkdir=True, workspace_rmdir=True),
        PlanningTool(),
        KnowledgeGraphTool(),
    ]
    if probe_bwrap():
        cards.append(ExecTool(workspace_id="fuzz", mode="bwrap"))
    agent = FakeObserver("Fuzzer", "fuzz")
    tools = {tool.name: tool for tool in ToolFactory(cards, observer=agent).tools()}
    tree = root / "fuzz"
    (tree / "sub").mkdir(parents=True, exist_ok=True)
    (tree / "notes.txt").write_text("hello\nworld\n")
    os.symlink("../outside", tree / "escape")
    os.mkfifo(tree / "pipe")
    yield {"tools": tools, "tree": tree, "outside": outside, "before": fingerprint(outside)}
    agent.close()
    from toolcards.workspace._actor import stop_workspace_actors

    stop_workspace_actors()
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(base, ignore_errors=True)


def call_bounded(tool: Tool, arguments: dict[str, Any]) -> Any:
    """Call ``tool``; a raw exception or a call that does not return within the bound fails."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = tool.call_sync(arguments)
        except (RetriableError, ToolFailed) as exc:
            outcome["refused"] = str(exc)
        except BaseException as exc:
            outcome["raw"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(CALL_BOUND_S)
    assert not worker.is_alive(), f"{tool.name}({_short(arguments)}) did not return within {CALL_BOUND_S:g} s"
    if "raw" in outcome:
        raise AssertionError(f"{tool.name}({_short(arguments)}) raised {outcome['raw']!r}") from outcome["raw"]
    return outcome.get("result", outcome.get("refused"))


def _short(arguments: dict[str, Any]) -> str:
    text = repr(arguments)
    return text if len(text) < 300 else text[:300] + "..."


TOOL_NAMES = [
    "workspace_read",
    "workspace_list",
    "workspace_glob",
    "workspace_grep",
    "workspace_view",
    "workspace_write",
    "workspace_edit",
    "workspace_multi_edit",
    "workspace_patch",
    "workspace_delete",
    "workspace_mkdir",
    "workspace_rmdir",
    "get_planning_task",
    "update_planning",
    "search_planning",
    "update_graph",
    "search_graph",
    "exec_command",
]


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_argument_gets_an_answer_and_nothing_outside_is_touched(arena: dict[str, Any], name: str) -> None:
    tools: dict[str, Tool] = arena["tools"]
    if name not in tools:
        pytest.skip(f"{name} cannot run here (bubblewrap unavailable)")
    tool = tools[name]

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(arguments=from_schema(tool.parameters_schema))
    def fuzz(arguments: dict[str, Any]) -> None:
        answer = call_bounded(tool, arguments)
        assert CANARY not in str(answer), f"{name}({_short(arguments)}) returned content from outside the tree"
        assert fingerprint(arena["outside"]) == arena["before"], f"{name}({_short(arguments)}) touched outside"

    fuzz()
