"""``workspace_read_many`` and ``workspace_read(tail=...)``: several files in one call, the end of one."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.workspace.hostile import CheckedAgent
from tests.workspace.test_journal import plain
from toolcards import ToolFactory
from toolcards.testing import FakeObserver
from toolcards.workspace._tool import MAX_READ_MANY, WorkspaceTool
from toolcards.workspace._tree import READ_CHUNK_BYTES


def numbered(lines: int, newline: str = "\n") -> str:
    return "".join(f"line {n}{newline}" for n in range(1, lines + 1))


def test_several_files_each_under_its_header_with_failures_inline(a: CheckedAgent) -> None:
    a("workspace_write", path="a.txt", content="alpha\nbeta\n")
    a("workspace_write", path="src/b.py", content="x = 1")
    (a.root / "blob.bin").write_bytes(b"\x00\x01")
    text = plain(a("workspace_read_many", paths=["a.txt", "missing.txt", "src/b.py", "blob.bin", "../x", "a.txt"]))
    assert text.split("\n\n") == [
        "==> a.txt <==\n1\talpha\n2\tbeta",
        "==> missing.txt <==\n(File 'missing.txt' does not exist. Call workspace_glob to find the right path, "
        "then retry.)",
        "==> src/b.py <==\n1\tx = 1",
        "==> blob.bin <==\n('blob.bin' looks binary (it is not UTF-8 text), so it cannot be shown as lines. For an "
        "image call workspace_view; PDF, DOCX, XLSX and PPTX documents are converted to text when read. To replace "
        "it, call workspace_write with the new content.)",
        "==> ../x <==\n(path escapes the workspace root — use a path relative to it (got '../x'))",
    ]


def test_files_read_together_may_be_changed_as_after_a_read(a: CheckedAgent, b: CheckedAgent) -> None:
    b("workspace_write", path="one.txt", content="one\n")
    b("workspace_write", path="two.txt", content="two\n")
    a("workspace_read_many", paths=["one.txt", "two.txt"])
    assert a("workspace_write", path="one.txt", content="ONE\n").startswith("Wrote one.txt")
    assert a("workspace_edit", path="two.txt", old_string="two", new_string="TWO").startswith("Edited two.txt")


def test_an_answer_past_the_budget_is_spilled_and_licenses_no_overwrite(alice: FakeObserver, tmp_path: Path) -> None:
    a = CheckedAgent(alice, tmp_path, workspace_read_many={"output_budget": 2_000})
    for name in ("long1.txt", "long2.txt"):
        a("workspace_write", path=name, content=numbered(150))
    a("workspace_write", path="short.txt", content="short\n")
    answer = a("workspace_read_many", paths=["long1.txt", "long2.txt", "short.txt"])
    assert "==> long1.txt <==" in answer and "1\tline 1" in answer
    assert ".toolcards/spill/" in answer  # the whole answer is kept where the model can page it
    spilled = next((a.root / ".toolcards/spill").iterdir()).read_text()
    assert "==> short.txt <==\n1\tshort" in spilled
    _, refusal = a.attempt("workspace_write", path="short.txt", content="new\n")
    assert refusal is not None and "without offset and limit before overwriting it" in refusal
    assert a("workspace_edit", path="short.txt", old_string="short", new_string="long").startswith("Edited")


@pytest.mark.parametrize(
    ("paths", "expected"),
    [([], "at least 1 item"), (["f.txt"] * (MAX_READ_MANY + 1), f"at most {MAX_READ_MANY} items")],
)
def test_bad_path_lists_are_refused(a: CheckedAgent, paths: list[str], expected: str) -> None:
    _, message = a.attempt("workspace_read_many", paths=paths)
    assert message is not None and expected in message


def test_a_model_reads_two_files_in_one_call(alice: FakeObserver) -> None:
    factory = ToolFactory([WorkspaceTool()], observer=alice)
    root: Path = factory.cards[0].root  # type: ignore[attr-defined]
    (root / "a.md").write_text("A\n")
    (root / "b.md").write_text("B\n")
    seen: list[ToolReturnPart] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.extend(p for p in messages[-1].parts if isinstance(p, ToolReturnPart))
        if not seen:
            return ModelResponse(parts=[ToolCallPart("workspace_read_many", {"paths": ["a.md", "b.md"]})])
        return ModelResponse(parts=[TextPart("done")])

    Agent(FunctionModel(respond), toolsets=[factory.toolset()]).run_sync("read both")
    assert plain(str(seen[0].content)) == "==> a.md <==\n1\tA\n\n==> b.md <==\n1\tB"


# -- tail ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("final_newline", [True, False])
def test_tail_shows_the_last_lines_with_their_own_numbers(a: CheckedAgent, newline: str, final_newline: bool) -> None:
    text = numbered(20, newline)
    if not final_newline:
        text = text.removesuffix(newline)
    (a.root / "log.txt").write_bytes(text.encode())
    assert plain(a("workspace_read", path="log.txt", tail=3)) == "18\tline 18\n19\tline 19\n20\tline 20"
    assert plain(a("workspace_read", path="log.txt", tail=50)) == plain(a("workspace_read", path="log.txt"))


def test_tail_of_a_file_streamed_in_several_reads(a: CheckedAgent) -> None:
    lines = READ_CHUNK_BYTES // 5
    (a.root / "big.log").write_text(numbered(lines))
    assert plain(a("workspace_read", path="big.log", tail=2)) == (
        f"{lines - 1}\tline {lines - 1}\n{lines}\tline {lines}"
    )
    # A tail read is a page read: enough to edit, not to overwrite.
    assert a("workspace_edit", path="big.log", old_string=f"line {lines}\n", new_string="end\n").startswith("Edited")


def test_tail_of_an_empty_file_and_bad_tails(a: CheckedAgent) -> None:
    (a.root / "empty.txt").write_text("")
    assert plain(a("workspace_read", path="empty.txt", tail=5)) == "(empty file)"
    _, message = a.attempt("workspace_read", path="empty.txt", tail=0)
    assert message is not None and "greater than or equal to 1" in message
    _, message = a.attempt("workspace_read", path="empty.txt", tail=2, offset=3)
    assert message == "Pass either offset (3) or tail (2), not both."
    # limit would be ignored beside tail: refused rather than silently dropped.
    _, message = a.attempt("workspace_read", path="empty.txt", tail=2, limit=5)
    assert message == "tail (2) is the number of lines read: pass it without limit (5)."
    (a.root / "two.txt").write_text("one\ntwo\n")
    for huge in ({"tail": 2**63}, {"limit": 2**63}):  # past a machine word: an OverflowError once
        assert plain(a("workspace_read", path="two.txt", **huge)) == "1\tone\n2\ttwo"
