"""``WorkspaceTool`` through the factory and the pipeline, as agents and orchestrators use it."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pykka
import pytest
from pydantic import ValidationError
from pydantic_ai import Agent, BinaryContent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards import COMMAND, TOOL_CALL, RetriableError, Tool, ToolFactory, ToolFailed, WiringError
from toolcards.actors._system import ActorSystem
from toolcards.core._registry import dump_cards, load_cards
from toolcards.fs._locations import internal_dir
from toolcards.testing import FakeObserver
from toolcards.workspace import _documents as documents
from toolcards.workspace._actor import WorkspaceActor, stop_workspace_actors
from toolcards.workspace._paths import ESCAPE_MESSAGE
from toolcards.workspace._tool import WorkspaceReadParam, WorkspaceTool, WorkspaceViewParam
from toolcards.workspace._tree import Tree

WRITE_TOOLS = {
    "workspace_write",
    "workspace_edit",
    "workspace_multi_edit",
    "workspace_patch",
    "workspace_delete",
    "workspace_move",
    "workspace_mkdir",
    "workspace_rmdir",
}
READ_TOOLS = {
    "workspace_read",
    "workspace_list",
    "workspace_glob",
    "workspace_grep",
    "workspace_search",
    "workspace_view",
    "workspace_info",
    "workspace_read_many",
}
OFF_BY_DEFAULT = {"workspace_mkdir", "workspace_rmdir"}
JOURNAL_READS = {"workspace_history", "workspace_diff"}
JOURNAL_TOOLS = {*JOURNAL_READS, "workspace_undo"}
COMMANDS_ONLY = {"workspace_export_git"}
"""Offered to orchestrators and the command line only: it writes outside the tree."""
BEYOND_THE_PEER = {"workspace_move", "workspace_info", "workspace_read_many"}
"""File operations of the reference MCP file server that akgentic-tool has no counterpart for."""
"""The journal's tools: commands by default, so a model pays for no definition."""
EVERYTHING: dict[str, Any] = dict.fromkeys({*OFF_BY_DEFAULT, "workspace_multi_edit", "workspace_patch"}, True)


class Agent_:
    """One agent's workspace tools (every one of them), called through the pipeline like a
    model or a command would."""

    def __init__(self, observer: FakeObserver, **card: Any) -> None:
        self.factory = ToolFactory([WorkspaceTool(**{**EVERYTHING, **card})], observer=observer)
        self.tools: dict[str, Tool] = {tool.name: tool for tool in self.factory.tools()}
        self.root = self.factory.cards[0].root  # type: ignore[attr-defined]

    def __call__(self, name: str, **args: Any) -> Any:
        return self.tools[name].call_sync(args, channel=TOOL_CALL)

    def read(self, path: str, **args: Any) -> str:
        return unwrap(self("workspace_read", path=path, **args))

    def refused(self, name: str, **args: Any) -> str:
        with pytest.raises(RetriableError) as info:
            self(name, **args)
        return str(info.value)


def unwrap(result: str) -> str:
    """The data inside an untrusted-output envelope."""
    lines = result.split("\n")
    assert lines[0].startswith("[BEGIN UNTRUSTED") and lines[-1].startswith("[END UNTRUSTED")
    return "\n".join(lines[1:-1])


@pytest.fixture
def a(alice: FakeObserver) -> Agent_:
    return Agent_(alice)


@pytest.fixture
def b(bob: FakeObserver) -> Agent_:
    return Agent_(bob)


# -- the package and the card ------------------------------------------------------------------


def test_the_package_exports_a_sorted_complete_all() -> None:
    import toolcards.workspace as package

    names = list(package.__all__)
    assert names == sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    assert all(getattr(package, name) is not None for name in names)


def test_importing_the_package_loads_no_heavy_dependency() -> None:
    code = "import sys, toolcards.workspace; print(*sys.modules)"
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    assert not {"pydantic_ai", "PIL", "markitdown", "rapidfuzz", "numpy"} & {m.split(".")[0] for m in loaded}
    assert "toolcards.workspace._tool" in loaded


def test_the_models_do_not_import_pykka() -> None:
    from toolcards.workspace import _gate as gate
    from toolcards.workspace import _models as models

    for module in (models, gate):
        tree = ast.parse(Path(module.__file__ or "").read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert imported, "the sweep found no imports at all"
        assert not {name for name in imported if name.split(".")[0] == "pykka" or name.endswith(".actor")}


def test_the_card_round_trips_through_config() -> None:
    card = WorkspaceTool(read_only=True, workspace_id="shared", workspace_view=WorkspaceViewParam(max_dimension=512))
    assert WorkspaceTool.model_validate(card.model_dump()) == card
    (loaded,) = load_cards(dump_cards([card]))
    assert loaded == card
    assert json.loads(json.dumps(card.model_dump(mode="json")))["workspace_view"]["max_dimension"] == 512


@pytest.mark.parametrize("workspace_id", ["..", ".", "a/b", "", "x" * 129, ".toolcards"])
def test_invalid_workspace_ids_are_refused_when_the_card_is_made(workspace_id: str) -> None:
    with pytest.raises(ValidationError, match="Invalid workspace id"):
        WorkspaceTool(workspace_id=workspace_id)


def test_a_team_id_that_cannot_name_a_tree_is_a_wiring_error(system: ActorSystem) -> None:
    with pytest.raises(WiringError, match=r"workspace_id=\.\.\."):
        ToolFactory([WorkspaceTool()], observer=FakeObserver("Ann", "team one", system=system))
    ToolFactory([WorkspaceTool(workspace_id="ok")], observer=FakeObserver("Ann", "team one", system=system))


def test_the_card_needs_a_team_member() -> None:
    with pytest.raises(WiringError, match="ActorToolObserver"):
        ToolFactory([WorkspaceTool()])


def test_the_tree_is_the_team_id_under_the_root(a: Agent_, isolated_root: Path) -> None:
    assert a.root == (isolated_root / "team-1").resolve()
    a("workspace_write", path="src/a.py", content="x = 1\n")
    assert (isolated_root / "team-1" / "src" / "a.py").read_text() == "x = 1\n"


def test_the_default_card_offers_the_everyday_tools(alice: FakeObserver) -> None:
    default = ToolFactory([WorkspaceTool()], observer=alice)
    assert {t.name for t in default.tools(TOOL_CALL)} == (READ_TOOLS | WRITE_TOOLS | JOURNAL_TOOLS) - OFF_BY_DEFAULT
    assert {t.name for t in default.tools(COMMAND)} == (
        READ_TOOLS | WRITE_TOOLS | JOURNAL_TOOLS | COMMANDS_ONLY
    ) - OFF_BY_DEFAULT


def test_every_tool_is_a_tool_call_and_a_command_by_default(a: Agent_) -> None:
    assert set(a.tools) == READ_TOOLS | WRITE_TOOLS | JOURNAL_TOOLS | COMMANDS_ONLY
    assert all(tool.channels == {TOOL_CALL, COMMAND} for name, tool in a.tools.items() if name not in COMMANDS_ONLY)
    assert all(a.tools[name].channels == {COMMAND} for name in COMMANDS_ONLY)
    assert {name for name, tool in a.tools.items() if tool.untrusted_output} == READ_TOOLS | JOURNAL_READS
    assert {name for name, tool in a.tools.items() if tool.mutates} == WRITE_TOOLS | {"workspace_undo"}


def test_read_only_removes_every_write_tool_from_every_channel(alice: FakeObserver) -> None:
    factory = ToolFactory([WorkspaceTool(read_only=True, **EVERYTHING)], observer=alice)
    # Exporting the journal changes nothing in the tree: a read-only card keeps it.
    assert {t.name for t in factory.tools()} == READ_TOOLS | JOURNAL_READS | COMMANDS_ONLY
    assert {t.name for t in factory.tools(COMMAND)} == READ_TOOLS | JOURNAL_READS | COMMANDS_ONLY
    assert {f.__name__ for f in factory.get_tools()} == READ_TOOLS | JOURNAL_READS
    assert set(factory.command_registry().names) == READ_TOOLS | JOURNAL_READS | COMMANDS_ONLY
    seen: list[AgentInfo] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return ModelResponse(parts=[TextPart("ok")])

    Agent(FunctionModel(respond), toolsets=[factory.toolset()]).run_sync("go")
    assert {d.name for d in seen[0].function_tools} == READ_TOOLS | JOURNAL_READS


def test_descriptions_are_short_and_name_no_other_tool(a: Agent_) -> None:
    definitions = [
        {"name": t.name, "description": t.description, "parameters": t.parameters_schema}
        for t in a.factory.tools(TOOL_CALL)
    ]
    for definition in definitions:
        others = (READ_TOOLS | WRITE_TOOLS | JOURNAL_TOOLS) - {definition["name"]}
        assert not [name for name in others if re.search(rf"\b{name}\b", json.dumps(definition))]
    # About 1,170 tokens for the thirteen file tools the peer has too (with paging, tails, dry
    # runs and workspace_search), 290 more for the journal's three, 230 for the file operations beyond the peer's.
    assert len(json.dumps([d for d in definitions if d["name"] not in JOURNAL_TOOLS | BEYOND_THE_PEER])) < 5_100
    assert len(json.dumps(definitions)) < 7_500


# -- paths ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("workspace_read", {"path": "../secret.txt"}),
        ("workspace_read", {"path": "/etc/passwd"}),
        ("workspace_list", {"path": ".."}),
        ("workspace_glob", {"pattern": "../**/*"}),
        ("workspace_glob", {"pattern": "*", "path": "../team-2"}),
        ("workspace_grep", {"pattern": "x", "include": "../*.txt"}),
        ("workspace_view", {"path": "../x.png"}),
        ("workspace_write", {"path": "../x.txt", "content": "x"}),
        ("workspace_edit", {"path": "../x.txt", "old_string": "a", "new_string": "b"}),
        ("workspace_multi_edit", {"edits": [{"path": "../x", "old_string": "a", "new_string": "b"}]}),
        ("workspace_patch", {"patch_text": "--- /dev/null\n+++ b/../x.txt\n@@ -0,0 +1 @@\n+x\n"}),
        ("workspace_delete", {"path": "../x.txt"}),
        ("workspace_mkdir", {"path": "../x"}),
        ("workspace_rmdir", {"path": "../team-2"}),
    ],
)
def test_every_path_outside_the_root_gets_one_message(a: Agent_, tool: str, args: dict[str, Any]) -> None:
    assert ESCAPE_MESSAGE in a.refused(tool, **args)
    assert not (a.root.parent / "x.txt").exists() and not (a.root.parent / "x").exists()


def test_a_symlink_out_of_the_tree_is_refused(a: Agent_, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    (a.root / "link.txt").symlink_to(tmp_path / "outside.txt")
    assert ESCAPE_MESSAGE in a.refused("workspace_read", path="link.txt")
    assert ESCAPE_MESSAGE in a.refused("workspace_write", path="link.txt", content="x")
    assert (tmp_path / "outside.txt").read_text() == "secret"


def test_messages_never_show_host_paths(a: Agent_) -> None:
    a("workspace_write", path="d/a.txt", content="x\n")
    messages = [
        a.refused("workspace_read", path="d/missing.txt"),
        a.refused("workspace_read", path="d"),
        a.refused("workspace_edit", path="d/a.txt", old_string="nope", new_string="y"),
        a.refused("workspace_delete", path="d"),
        a.refused("workspace_list", path="d/a.txt"),
        str(a("workspace_glob", pattern="**/*.txt")),
    ]
    assert not [m for m in messages if str(a.root) in m or str(a.root.parent) in m]


# -- reading ------------------------------------------------------------------------------------------


def test_read_numbers_lines_and_says_how_to_continue(a: Agent_) -> None:
    a("workspace_write", path="f.txt", content="".join(f"line {n}\n" for n in range(1, 11)))
    assert a.read("f.txt").split("\n")[:2] == ["1\tline 1", "2\tline 2"]
    page = a.read("f.txt", offset=4, limit=3).split("\n")
    assert page == [
        "4\tline 4",
        "5\tline 5",
        "6\tline 6",
        "(showing lines 4-6 of 10; read again with offset=7 to continue)",
    ]
    assert "past the end" in a.refused("workspace_read", path="f.txt", offset=11)


def test_read_without_line_numbers_shows_the_bare_lines_and_still_licenses_changes(a: Agent_, b: Agent_) -> None:
    text = "".join(f"line {n}\n" for n in range(1, 11))
    b("workspace_write", path="f.txt", content=text)
    assert a.read("f.txt", line_numbers=False) == text.rstrip("\n")
    assert a.read("f.txt", offset=9, line_numbers=False).split("\n") == ["line 9", "line 10"]
    page = a.read("f.txt", limit=2, line_numbers=False).split("\n")
    assert page == ["line 1", "line 2", "(showing lines 1-2 of 10; read again with offset=3 to continue)"]
    assert a.read("f.txt", tail=1, line_numbers=False) == "line 10"
    # A bare read is a read: an edit with text copied from it goes through, and so does an overwrite.
    assert a("workspace_edit", path="f.txt", old_string="line 3\n", new_string="three\n").startswith("Edited")
    a.read("f.txt", line_numbers=False)
    assert a("workspace_write", path="f.txt", content="new\n").startswith("Wrote")


def test_a_numbered_line_is_its_number_a_tab_and_the_text(a: Agent_) -> None:
    """What an edit copies from a read: everything after the first tab of a line, exactly."""
    text = "\tindented\n  two spaces\n3\tlooks numbered\n"
    a("workspace_write", path="f.txt", content=text)
    lines = a.read("f.txt").split("\n")
    assert lines == ["1\t\tindented", "2\t  two spaces", "3\t3\tlooks numbered"]
    assert [line.split("\t", 1)[1] for line in lines] == text.rstrip("\n").split("\n")


def test_a_page_cut_at_the_output_budget_says_where_to_read_on_with_or_without_numbers(alice: FakeObserver) -> None:
    a = Agent_(alice, workspace_read=WorkspaceReadParam(output_budget=500))
    a("workspace_write", path="f.txt", content="".join(f"{n:03} " + "x" * 40 + "\n" for n in range(1, 101)))
    for numbered in (True, False):
        page = a.read("f.txt", line_numbers=numbered).split("\n")
        last = int(page[-2].split("\t")[-1][:3])
        assert page[-1] == (
            f"(showing lines 1-{last} of 100: output limit reached; read again with offset={last + 1} to continue)"
        )


def test_the_envelope_costs_at_most_five_percent_of_a_2_kb_read(a: Agent_) -> None:
    content = ("0123456789abcdef" * 8 + "\n") * 15 + "x" * 113  # 2,048 characters
    a("workspace_write", path="data.txt", content=content)
    answer = a("workspace_read", path="data.txt", line_numbers=False)
    inside = unwrap(answer)
    assert inside == content
    assert len(answer) - len(inside) <= 0.05 * len(content)


def test_read_refuses_binary_directories_and_images_with_the_next_step(a: Agent_) -> None:
    (a.root / "blob.bin").write_bytes(b"\xff\xfe\x00\x01")
    (a.root / "d").mkdir()
    (a.root / "pic.png").write_bytes(b"\x89PNG")
    assert "not UTF-8 text" in a.refused("workspace_read", path="blob.bin")
    assert "workspace_list" in a.refused("workspace_read", path="d")
    assert "workspace_view" in a.refused("workspace_read", path="pic.png")
    assert "workspace_glob" in a.refused("workspace_read", path="missing.txt")


def test_a_read_cut_by_the_output_budget_ends_at_a_line_and_counts_as_a_page(alice: FakeObserver) -> None:
    agent = Agent_(alice, workspace_read=WorkspaceReadParam(output_budget=400))
    agent("workspace_write", path="long.txt", content="".join(f"line number {n}\n" for n in range(1, 101)))
    page = agent.read("long.txt")
    last, notice = page.split("\n")[-2:]
    shown = int(last.split("\t")[0])
    assert (
        notice
        == f"(showing lines 1-{shown} of 100: output limit reached; read again with offset={shown + 1} to continue)"
    )
    assert len(page) <= 400
    assert "without offset and limit" in agent.refused("workspace_write", path="long.txt", content="x\n")


def test_list_glob_and_grep_are_outside_data(a: Agent_) -> None:
    for name in ("src/a.py", "src/b.py", "docs/readme.md"):
        a("workspace_write", path=name, content=f"# {name}\nvalue = 1\n")
    assert unwrap(a("workspace_list")).split("\n") == ["docs/", "src/"]
    assert sorted(unwrap(a("workspace_glob", pattern="**/*.py")).split("\n")) == ["src/a.py", "src/b.py"]
    assert unwrap(a("workspace_grep", pattern="value", include="*.md")) == "docs/readme.md:2: value = 1"
    assert "src/a.py:1: # src/a.py" in unwrap(a("workspace_grep", pattern=r"^# src", path="src"))


def test_commands_reach_the_same_tools(alice: FakeObserver) -> None:
    registry = ToolFactory([WorkspaceTool()], observer=alice).command_registry()
    assert registry.dispatch("/workspace_write notes.txt 'hello there'") == "Created notes.txt (1 line)."
    assert "1\thello there" in registry.dispatch("/workspace_read notes.txt")
    assert registry.dispatch("/workspace_read ../x").startswith("Error: " + ESCAPE_MESSAGE)


# -- the write gate -------------------------------------------------------------------------------------


def test_creating_needs_no_read_but_overwriting_an_unread_file_is_refused(a: Agent_, b: Agent_) -> None:
    assert a("workspace_write", path="a.txt", content="alice\n") == "Created a.txt (1 line)."
    message = b.refused("workspace_write", path="a.txt", content="bob\n")
    assert message.startswith("Call workspace_read on 'a.txt' first") and "@Alice wrote it last" in message
    b.read("a.txt")
    assert b("workspace_write", path="a.txt", content="bob\n") == "Wrote a.txt (1 line)."


def test_the_refusal_names_the_other_agent_and_shows_the_diff(a: Agent_, b: Agent_) -> None:
    a("workspace_write", path="plan.md", content="# Plan\n- step one\n- step two\n")
    b.read("plan.md")
    a("workspace_edit", path="plan.md", old_string="- step two", new_string="- step two (done)")
    message = b.refused("workspace_write", path="plan.md", content="# Plan\n- something else\n")
    lines = message.split("\n")
    assert lines[0].startswith("Call workspace_read on 'plan.md' again, then redo your change")
    assert lines[1] == "It was changed by @Alice through the workspace tools."
    assert "-- step two\n+- step two (done)" in message
    assert (a.root / "plan.md").read_text().endswith("(done)\n")


def test_a_change_made_on_disk_by_a_command_is_detected(a: Agent_) -> None:
    a("workspace_write", path="a.py", content="x = 1\n")
    a.read("a.py")
    with (a.root / "a.py").open("a") as handle:  # what a shell command would do
        handle.write("y = 2\n")
    message = a.refused("workspace_edit", path="a.py", old_string="x = 1", new_string="x = 3")
    assert "changed outside the workspace tools (e.g. by a command)" in message
    assert "+y = 2" in message
    a.read("a.py")
    a("workspace_edit", path="a.py", old_string="x = 1", new_string="x = 3")
    assert (a.root / "a.py").read_text() == "x = 3\ny = 2\n"


def test_a_page_read_licenses_an_edit_but_not_an_overwrite(a: Agent_, b: Agent_) -> None:
    a("workspace_write", path="f.txt", content="".join(f"line {n}\n" for n in range(1, 51)))
    b.read("f.txt", offset=10, limit=5)
    assert "without offset and limit" in b.refused("workspace_write", path="f.txt", content="short\n")
    b("workspace_edit", path="f.txt", old_string="line 12\n", new_string="line twelve\n")
    assert "without offset and limit" in b.refused("workspace_write", path="f.txt", content="short\n")
    b.read("f.txt", limit=50)  # a limit that covers every line is a full read
    b("workspace_write", path="f.txt", content="short\n")


def test_after_its_own_edit_an_agent_may_edit_again_and_others_must_re_read(a: Agent_, b: Agent_) -> None:
    a("workspace_write", path="f.txt", content="a\nb\nc\n")
    b.read("f.txt")
    a("workspace_edit", path="f.txt", old_string="a", new_string="A")
    a("workspace_edit", path="f.txt", old_string="b", new_string="B")
    assert "changed since you read it" in b.refused("workspace_edit", path="f.txt", old_string="c", new_string="C")
    b.read("f.txt")
    b("workspace_edit", path="f.txt", old_string="c", new_string="C")
    assert (a.root / "f.txt").read_text() == "A\nB\nC\n"


# -- writing ------------------------------------------------------------------------------------------------


def test_a_write_to_a_path_ending_in_a_slash_is_refused_and_blocks_nothing(a: Agent_) -> None:
    message = a.refused("workspace_write", path="notes/", content="x\n")
    assert message.startswith("'notes/' ends with '/', which names a directory: give the path of a file in it")
    assert not (a.root / "notes").exists()
    a("workspace_write", path="notes/a.md", content="x\n")  # once refused by a file named notes
    assert (a.root / "notes" / "a.md").read_text() == "x\n"


def test_write_keeps_crlf_and_permissions(a: Agent_) -> None:
    script = a.root / "run.sh"
    script.write_bytes(b"echo one\r\necho two\r\n")
    script.chmod(0o755)
    a.read("run.sh")
    a("workspace_write", path="run.sh", content="echo three\necho four\n")
    assert script.read_bytes() == b"echo three\r\necho four\r\n"
    assert os.stat(script).st_mode & 0o777 == 0o755


def test_edit_returns_a_diff_and_keeps_crlf(a: Agent_) -> None:
    (a.root / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    a.read("w.txt")
    result = a("workspace_edit", path="w.txt", old_string="two\nthree", new_string="2\n3")
    assert result.split("\n")[0].startswith("Edited w.txt (1 place")
    assert "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n one\n-two\n-three\n+2\n+3" in result
    assert (a.root / "w.txt").read_bytes() == b"one\r\n2\r\n3\r\n"


def test_an_ambiguous_edit_is_refused_with_the_count_and_lines(a: Agent_) -> None:
    a("workspace_write", path="f.py", content="x = 1\ny = 2\nx = 1\n")
    message = a.refused("workspace_edit", path="f.py", old_string="x = 1", new_string="x = 0")
    assert "matches 2 places" in message and "1, 3" in message
    a("workspace_edit", path="f.py", old_string="x = 1", new_string="x = 0", replace_all=True)
    assert (a.root / "f.py").read_text() == "x = 0\ny = 2\nx = 0\n"


def test_an_edit_of_a_missing_file_says_how_to_create_it(a: Agent_) -> None:
    assert "workspace_write" in a.refused("workspace_edit", path="new.py", old_string="a", new_string="b")


def test_multi_edit_applies_across_files_or_not_at_all(a: Agent_) -> None:
    a("workspace_write", path="a.py", content="alpha = 1\n")
    a("workspace_write", path="b.py", content="beta = 2\n")
    failing = [
        {"path": "a.py", "old_string": "alpha = 1", "new_string": "alpha = 10"},
        {"path": "b.py", "old_string": "gamma", "new_string": "delta"},
    ]
    message = a.refused("workspace_multi_edit", edits=failing)
    assert message.startswith("Edit 2 of 2 (b.py) failed, so no edit was applied")
    assert (a.root / "a.py").read_text() == "alpha = 1\n"
    edits = [
        {"path": "a.py", "old_string": "alpha = 1", "new_string": "alpha = 10"},
        {"path": "b.py", "old_string": "beta = 2", "new_string": "beta = 20"},
        {"path": "a.py", "old_string": "alpha = 10", "new_string": "alpha = 100"},
    ]
    result = a("workspace_multi_edit", edits=json.dumps(edits))
    assert result.startswith("Applied 3 edits to 2 files.")
    assert "+alpha = 100" in result and "+beta = 20" in result
    assert (a.root / "a.py").read_text() == "alpha = 100\n" and (a.root / "b.py").read_text() == "beta = 20\n"


def test_multi_edit_needs_a_current_read_of_every_file(a: Agent_, b: Agent_) -> None:
    a("workspace_write", path="a.py", content="x\n")
    a("workspace_write", path="b.py", content="y\n")
    b.read("a.py")
    edits = [
        {"path": "a.py", "old_string": "x", "new_string": "X"},
        {"path": "b.py", "old_string": "y", "new_string": "Y"},
    ]
    assert "Call workspace_read on 'b.py' first" in b.refused("workspace_multi_edit", edits=edits)
    assert (a.root / "a.py").read_text() == "x\n"


def test_multi_edit_rolls_back_when_a_write_fails(a: Agent_, monkeypatch: pytest.MonkeyPatch) -> None:
    a("workspace_write", path="a.py", content="x\n")
    a("workspace_write", path="b.py", content="y\n")
    written: list[str] = []
    write_bytes = Tree.write_bytes

    def disk_full_on_b(tree: Tree, path: str, data: bytes, **kwargs: Any) -> str:
        written.append(path)
        if path == "b.py" and len(written) == 2:
            raise ToolFailed("Cannot write 'b.py': no space left on the device.")
        return write_bytes(tree, path, data, **kwargs)

    monkeypatch.setattr(Tree, "write_bytes", disk_full_on_b)
    edits = [
        {"path": "a.py", "old_string": "x", "new_string": "X"},
        {"path": "b.py", "old_string": "y", "new_string": "Y"},
    ]
    with pytest.raises(ToolFailed, match="nothing was changed; the 1 file"):
        a("workspace_multi_edit", edits=edits)
    assert (a.root / "a.py").read_text() == "x\n" and (a.root / "b.py").read_text() == "y\n"
    monkeypatch.undo()
    a("workspace_multi_edit", edits=edits)  # records were not advanced by the failed attempt
    assert (a.root / "a.py").read_text() == "X\n"


PATCH = """\
--- a/keep.txt
+++ b/keep.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
--- /dev/null
+++ b/added.txt
@@ -0,0 +1,2 @@
+new
+file
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
"""


def test_patch_adds_updates_and_deletes_keeping_line_endings(a: Agent_) -> None:
    (a.root / "keep.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    (a.root / "gone.txt").write_text("bye\n")
    a.read("keep.txt", limit=1)  # a page read is enough for a patch
    a.read("gone.txt")
    assert a("workspace_patch", patch_text=PATCH) == "Patched:\nM keep.txt\nA added.txt\nD gone.txt"
    assert (a.root / "keep.txt").read_bytes() == b"one\r\nTWO\r\nthree\r\n"
    assert (a.root / "added.txt").read_text() == "new\nfile\n"
    assert not (a.root / "gone.txt").exists()
    a("workspace_write", path="added.txt", content="created by the patch, so known\n")


def test_a_patch_applies_all_or_nothing(a: Agent_) -> None:
    (a.root / "keep.txt").write_text("one\ntwo\nthree\n")
    (a.root / "gone.txt").write_text("something else\n")
    a.read("keep.txt")
    a.read("gone.txt")
    assert "gone.txt" in a.refused("workspace_patch", patch_text=PATCH)
    assert (a.root / "keep.txt").read_text() == "one\ntwo\nthree\n"
    assert not (a.root / "added.txt").exists()


def test_a_patch_rolls_back_when_a_write_fails(a: Agent_) -> None:
    (a.root / "keep.txt").write_text("one\ntwo\nthree\n")
    (a.root / "blocker").write_text("a file where the patch needs a directory\n")
    a.read("keep.txt")
    patch = PATCH.split("--- a/gone.txt", maxsplit=1)[0].replace("b/added.txt", "b/blocker/added.txt")
    message = a.refused("workspace_patch", patch_text=patch)
    assert "Writing blocker/added.txt failed" in message and "were restored" in message
    assert (a.root / "keep.txt").read_text() == "one\ntwo\nthree\n"


def test_a_patch_changing_an_unread_file_is_refused(a: Agent_, b: Agent_) -> None:
    a("workspace_write", path="keep.txt", content="one\ntwo\nthree\n")
    patch = PATCH.split("--- /dev/null", maxsplit=1)[0]
    assert "Call workspace_read on 'keep.txt' first" in b.refused("workspace_patch", patch_text=patch)


def test_delete_mkdir_and_rmdir(a: Agent_) -> None:
    assert a("workspace_mkdir", path="a/b") == "Created directory a/b/."
    assert a("workspace_mkdir", path="a/b") == "Directory a/b/ already exists."
    a("workspace_write", path="a/b/f.txt", content="x\n")
    assert "not empty" in a.refused("workspace_rmdir", path="a")
    assert a("workspace_delete", path="a/b/f.txt") == "Deleted a/b/f.txt."
    assert a("workspace_rmdir", path="a/b") == "Removed directory a/b/."
    a("workspace_write", path="a/c/g.txt", content="x\n")
    assert a("workspace_rmdir", path="a", recursive=True) == "Removed directory a/."
    assert list(a.root.iterdir()) == []


# -- teams ------------------------------------------------------------------------------------------------


def test_a_shared_workspace_spans_teams_with_one_actor(system: ActorSystem, isolated_root: Path) -> None:
    alice = Agent_(FakeObserver("Alice", "team-1", system=system), workspace_id="shared")
    carol = Agent_(FakeObserver("Carol", "team-2", system=system), workspace_id="shared")
    other = Agent_(FakeObserver("Dan", "team-2", system=system))
    assert alice.root == carol.root == (isolated_root / "shared").resolve()
    assert other.root == (isolated_root / "team-2").resolve()
    assert pykka.ActorRegistry.get_by_class(WorkspaceActor) == []  # binding starts no thread
    alice("workspace_write", path="notes.md", content="from team 1\n")
    other("workspace_write", path="elsewhere.md", content="another tree\n")
    carol("workspace_mkdir", path="shared-by-both")
    assert len(pykka.ActorRegistry.get_by_class(WorkspaceActor)) == 2
    carol.read("notes.md")
    alice.read("notes.md")
    carol("workspace_edit", path="notes.md", old_string="team 1", new_string="team 1 and 2")
    assert "changed by team-2/@Carol" in alice.refused("workspace_write", path="notes.md", content="x\n")
    assert not (other.root / "notes.md").exists()


def test_changes_reach_the_team_event_log(alice: FakeObserver, a: Agent_) -> None:
    a("workspace_write", path="a.txt", content="x\n")
    summaries = [e.summary for _, e in alice.team.events() if getattr(e, "kind", "") == "state_changed"]
    assert summaries == ["team-1/@Alice created a.txt"]


def test_binding_and_reading_start_no_actor_and_the_read_still_licenses_a_write(a: Agent_) -> None:
    (a.root / "notes.md").write_text("one\n")
    a.read("notes.md")
    # The read record went to the gate in the reader's thread: no actor was needed for it.
    assert pykka.ActorRegistry.get_by_class(WorkspaceActor) == []
    assert a("workspace_write", path="notes.md", content="two\n") == "Wrote notes.md (1 line)."
    assert len(pykka.ActorRegistry.get_by_class(WorkspaceActor)) == 1


def test_a_card_attaches_again_after_stop_workspace_actors(alice: FakeObserver, a: Agent_) -> None:
    a("workspace_write", path="a.txt", content="x\n")
    a.read("a.txt")
    stop_workspace_actors()
    # The new actor's records start empty (so the read must be done again), and the team
    # still hears about changes.
    assert "first" in a.refused("workspace_write", path="a.txt", content="y\n")
    a("workspace_write", path="b.txt", content="y\n")
    summaries = [e.summary for _, e in alice.team.events() if getattr(e, "kind", "") == "state_changed"]
    assert summaries == ["team-1/@Alice created a.txt", "team-1/@Alice created b.txt"]


@pytest.mark.parametrize(
    ("settings", "file_syncs", "directory_syncs"),
    [
        (["off"], 0, 0),
        (["normal"], 1, 0),
        (["full"], 1, 1),
        (["off", "full"], 1, 1),  # cards that disagree get the safest
    ],
)
def test_sync_decides_what_a_write_flushes(
    system: ActorSystem, monkeypatch: pytest.MonkeyPatch, settings: list[str], file_syncs: int, directory_syncs: int
) -> None:
    agents = [
        Agent_(FakeObserver(f"Agent{number}", "team-1", system=system), sync=sync)
        for number, sync in enumerate(settings)
    ]
    agents[0]("workspace_write", path="warm.txt", content="x\n")  # the actor is running
    calls: list[str] = []
    real_fdatasync, real_fsync = os.fdatasync, os.fsync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (calls.append("file"), real_fdatasync(fd))[1])
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("directory"), real_fsync(fd))[1])
    agents[0]("workspace_write", path="new/a.txt", content="x\n")
    assert (calls.count("file"), calls.count("directory")) == (file_syncs, directory_syncs)
    calls.clear()
    agents[0]("workspace_delete", path="new/a.txt")
    assert calls == ["directory"] * directory_syncs
    assert not (agents[0].root / "new" / "a.txt").exists()


def test_sync_is_checked_when_the_card_is_built() -> None:
    with pytest.raises(ValidationError, match="sync"):
        WorkspaceTool(sync="sometimes")  # type: ignore[arg-type]


# -- documents and images -----------------------------------------------------------------------------------


def test_documents_are_read_as_markdown_and_cached_outside_the_tree(a: Agent_) -> None:
    pytest.importorskip("markitdown")
    from tests.workspace.test_documents import make_docx

    make_docx(a.root / "spec.docx", "Requirements", "The tool must keep every edit.")
    text = a.read("spec.docx")
    assert "Requirements" in text and "The tool must keep every edit." in text
    assert text.startswith("1\t")
    assert [p.name for p in a.root.iterdir()] == ["spec.docx"]
    assert list((internal_dir() / "cache" / "documents").glob("*.md"))


def test_without_markitdown_reading_a_document_gives_the_install_command(
    a: Agent_, monkeypatch: pytest.MonkeyPatch
) -> None:
    (a.root / "spec.docx").write_bytes(b"PK\x05\x06" + b"\x00" * 18)  # an empty zip archive
    monkeypatch.setattr(documents, "_converter", None)
    monkeypatch.setitem(sys.modules, "markitdown", None)
    with pytest.raises(ToolFailed, match=r"pip install 'toolcards\[docs\]'"):
        a("workspace_read", path="spec.docx")


def test_view_returns_a_scaled_image_cached_outside_the_tree(alice: FakeObserver) -> None:
    image_module = pytest.importorskip("PIL.Image")
    agent = Agent_(alice, workspace_view=WorkspaceViewParam(max_dimension=100))
    image_module.new("RGB", (400, 200), (200, 10, 10)).save(agent.root / "chart.png")
    result = agent("workspace_view", path="chart.png")
    assert isinstance(result, BinaryContent) and result.media_type == "image/jpeg"
    assert image_module.open(io.BytesIO(result.data)).size == (100, 50)
    assert [p.name for p in agent.root.iterdir()] == ["chart.png"]
    assert list((internal_dir() / "cache" / "images").iterdir())
    assert "not an image" in agent.refused("workspace_view", path="chart.txt")


# -- a pydantic-ai agent ---------------------------------------------------------------------------------------


def test_an_agent_reads_before_writing_and_views_through_pydantic_ai(alice: FakeObserver, b: Agent_) -> None:
    image_module = pytest.importorskip("PIL.Image")
    b("workspace_write", path="hello.py", content="print('hi')\n")
    factory = ToolFactory([WorkspaceTool()], observer=alice)
    root = factory.cards[0].root  # type: ignore[attr-defined]
    image_module.new("RGBA", (64, 32), (0, 0, 255, 255)).save(root / "logo.png")
    script = [
        ToolCallPart("workspace_write", {"path": "hello.py", "content": "print('mine')\n"}),
        ToolCallPart("workspace_read", {"path": "hello.py"}),
        ToolCallPart("workspace_edit", {"path": "hello.py", "old_string": "'hi'", "new_string": "'hello'"}),
        ToolCallPart("workspace_view", {"path": "logo.png"}),
    ]
    seen: list[ToolReturnPart] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        if step < len(script):
            return ModelResponse(parts=[script[step]])
        seen.extend(p for m in messages for p in m.parts if isinstance(p, ToolReturnPart))
        return ModelResponse(parts=[TextPart("done")])

    result = Agent(FunctionModel(respond), toolsets=[factory.toolset()]).run_sync("say hello")
    assert result.output == "done"
    refusal, read, edit, view = seen
    assert [part.outcome for part in seen] == ["retried", "success", "success", "success"]
    assert str(refusal.content).startswith("Call workspace_read on 'hello.py' first")
    assert "@Bob wrote it last" in str(refusal.content)
    assert "1\tprint('hi')" in str(read.content)
    assert "+print('hello')" in str(edit.content)
    assert isinstance(view.content, BinaryContent)
    assert view.content.media_type == "image/png"
    assert (root / "hello.py").read_text() == "print('hello')\n"
