"""The spilled-output card: outputs over their budget kept in the team's store, for a team
without a workspace card, and ``read_spilled_output`` to read them back, in any process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

import toolcards
from toolcards import (
    COMMAND,
    TOOL_CALL,
    BaseToolParam,
    Channels,
    RetriableError,
    Tool,
    ToolCard,
    ToolFactory,
    capability,
)
from toolcards.core._services import SPILL_TO_STORE
from toolcards.spill import SpilledOutputTool, StoredSpills, stored_spills
from toolcards.spill._stored import SLOTS
from toolcards.store import MemoryStore, default_store
from toolcards.testing import FakeObserver

REPO = Path(__file__).resolve().parents[2]
SPILL_ID = re.compile(r"saved whole as spilled output '(\d+-[0-9a-f]{8})'")


class TextParam(BaseToolParam):
    expose: set[Channels] = {TOOL_CALL, COMMAND}


class TextCard(ToolCard):
    """Answers as long as asked."""

    kind: ClassVar[str] = "test_spilled_text"

    long_text: TextParam | bool = True

    @capability("long_text", untrusted_output=True)
    def numbered_rows(self, rows: int, tag: str = "row") -> str:
        """Numbered rows of text."""
        return "".join(f"{tag} {n:06d} of the long answer\n" for n in range(rows))


def tools(observer: FakeObserver, **fields: Any) -> dict[str, Tool]:
    cards = [TextCard(), SpilledOutputTool(**fields)]
    return {tool.name: tool for tool in ToolFactory(cards, observer=observer).tools()}


def spill_id(answer: str) -> str:
    found = SPILL_ID.search(answer)
    assert found, answer[-600:]
    return found[1]


def read_whole(read: Tool, spilled: str) -> str:
    """Every page of a spilled output, through ``read_spilled_output``."""
    text, offset = "", 0
    while True:
        page = read.call_sync({"spill_id": spilled, "offset": offset}, channel=TOOL_CALL)
        body = page.split("\n", 1)[1].rsplit("\n", 1)[0]  # inside the envelope
        shown, footer = body.rsplit("\n", 1)
        found = re.fullmatch(
            r"\(characters ([\d,]+)-([\d,]+) of ([\d,]+); (the end|read on with offset=(\d+))\)", footer
        )
        assert found and int(found[1].replace(",", "")) == offset, footer
        text += shown
        if found[4] == "the end":
            return text
        offset = int(found[5])


def test_an_output_over_its_budget_is_kept_in_the_store_and_read_back_whole(alice: FakeObserver) -> None:
    whole = TextCard().numbered_rows(20_000)
    mine = tools(alice)
    answer = mine["long_text"].call_sync({"rows": 20_000}, channel=TOOL_CALL)
    spilled = spill_id(answer)
    head = answer.split("\n[… ")[0].split("\n", 1)[1]
    assert whole.startswith(head) and whole.endswith(answer.split(" not shown …]\n")[1].split("\n[END")[0])
    assert answer.endswith(
        f"more than the 20,000 an answer shows. It is saved whole as spilled output {spilled!r}, kept for up to "
        f"24 hours. Read on with read_spilled_output(spill_id={spilled!r}, offset={len(head) + 1}).]"
    )
    assert read_whole(mine["read_spilled_output"], spilled) == whole
    # A page ends at a line when one ends near its end.
    near = mine["read_spilled_output"].call_sync({"spill_id": spilled, "limit": 32})
    assert "]\nrow 000000 of the long answer\n\n(characters 0-30 of 600,000; read on with offset=30)\n[END" in near
    far = mine["read_spilled_output"].call_sync({"spill_id": spilled, "offset": 35, "limit": 20})
    assert "]\n00001 of the long an\n(characters 35-55 of 600,000; read on with offset=55)\n[END" in far


def test_a_teammate_in_another_process_reads_it(shared_env: dict[str, str]) -> None:
    whole = TextCard().numbered_rows(30_000)
    with toolcards.Team("acme") as team:
        answer = team.member("Alice").factory(TextCard(), SpilledOutputTool()).tools()[0].call_sync({"rows": 30_000})
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import hashlib, toolcards
                from tests.spill.test_tool import read_whole
                from toolcards.spill import SpilledOutputTool
                with toolcards.Team("acme") as team:
                    (read,) = team.member("Bob").factory(SpilledOutputTool()).tools()
                    text = read_whole(read, {spill_id(answer)!r})
                print(len(text), hashlib.sha256(text.encode()).hexdigest())
                """
            ),
        ],
        capture_output=True,
        text=True,
        env={**shared_env, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    import hashlib

    assert child.stdout.split() == [str(len(whole)), hashlib.sha256(whole.encode()).hexdigest()]


@pytest.mark.slow
def test_two_processes_spilling_at_once_never_take_the_same_slot(shared_env: dict[str, str], tmp_path: Path) -> None:
    go = tmp_path / "go"
    script = """
        import os, sys, time
        from toolcards.spill import stored_spills
        from toolcards.store import default_store
        name, go = sys.argv[1], sys.argv[2]
        spills = stored_spills(default_store(), "acme")
        print("ready", flush=True)
        while not os.path.exists(go):  # both start together
            time.sleep(0.005)
        for n in range(15):
            print(spills.save(f"{name} output {n} " * 2_000, tool="t"), flush=True)
    """
    children = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(script), name, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=shared_env,
        )
        for name in ("P1", "P2")
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == "ready\n", child.communicate(timeout=120)
    go.touch()
    outputs = [child.communicate(timeout=120) for child in children]
    assert [child.returncode for child in children] == [0, 0], [err for _, err in outputs]
    spills = stored_spills(default_store(), "acme")
    ids = {name: out.split() for name, (out, _) in zip(("P1", "P2"), outputs, strict=True)}
    assert len({spilled.split("-")[0] for spilled in ids["P1"] + ids["P2"]}) == 30
    for name, saved in ids.items():
        for n, spilled in enumerate(saved):
            assert spills.page(spilled, 0, 10**6) == (f"{name} output {n} " * 2_000, len(f"{name} output {n} ") * 2_000)


def test_the_oldest_outputs_go_first_past_the_size_limit(alice: FakeObserver) -> None:
    mine = tools(alice, max_mb=1)  # 406,000 characters each: two fit in 2**20, not three
    ids = [spill_id(mine["long_text"].call_sync({"rows": 14_000, "tag": f"t{n}"})) for n in range(4)]
    read = mine["read_spilled_output"]
    for gone in ids[:2]:
        with pytest.raises(RetriableError, match=f"Spilled output '{gone}' is no longer kept: spilled outputs are"):
            read.call_sync({"spill_id": gone})
    assert [read.call_sync({"spill_id": kept, "limit": 3}).split("\n")[1] for kept in ids[2:]] == ["t2 ", "t3 "]


def test_at_most_every_slot_is_kept_the_oldest_reused_first() -> None:
    spills = StoredSpills(MemoryStore(), "team-1")
    ids = [spills.save(f"output {n}", tool="t") for n in range(SLOTS + 2)]
    assert [int(spilled.split("-")[0]) for spilled in ids] == [*range(SLOTS), 0, 1]
    with pytest.raises(RetriableError, match="no longer kept"):
        spills.page(ids[0], 0, 10)
    assert spills.page(ids[-1], 0, 100) == (f"output {SLOTS + 1}", len(f"output {SLOTS + 1}"))
    assert spills.page(ids[2], 2, 3) == ("tpu", len("output 2"))


def test_outputs_past_their_age_are_no_longer_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    spills = StoredSpills(MemoryStore(), "team-1")
    spills.keep(max_mb=1, max_hours=2)
    now = time.time()
    monkeypatch.setattr("toolcards.spill._stored.time.time", lambda: now - 3 * 3600)
    old = spills.save("old", tool="t")
    monkeypatch.setattr("toolcards.spill._stored.time.time", lambda: now)
    recent = spills.save("recent", tool="t")
    assert int(recent.split("-")[0]) == int(old.split("-")[0])  # its slot was freed for the new one
    with pytest.raises(RetriableError, match="kept for up to 2 hours"):
        spills.page(old, 0, 10)


def test_bad_ids_and_offsets_get_answers_that_say_what_to_do(alice: FakeObserver) -> None:
    mine = tools(alice)
    spilled = spill_id(mine["long_text"].call_sync({"rows": 2_000}))
    read = mine["read_spilled_output"]
    for bad in ("", "x", "99-0123abcd", "../1-0123abcd"):
        with pytest.raises(RetriableError, match=r"is not a spill id\. Copy it from the answer that was cut"):
            read.call_sync({"spill_id": bad})
    with pytest.raises(
        RetriableError, match=r"offset 9,999,999 is past the end: spilled output '.*' has 60,000 characters"
    ):
        read.call_sync({"spill_id": spilled, "offset": 9_999_999})


def test_the_workspace_wins_when_the_process_has_one(alice: FakeObserver) -> None:
    from toolcards.workspace import WorkspaceTool

    cards = [TextCard(), SpilledOutputTool(), WorkspaceTool()]
    text = {tool.name: tool for tool in ToolFactory(cards, observer=alice).tools()}["long_text"]
    assert "saved whole in the workspace as '.toolcards/spill/" in text.call_sync({"rows": 2_000})
    # An agent without the reader of either gets the cut.
    (alone,) = ToolFactory([TextCard()], observer=alice).tools()
    assert "[output cut: showed 20,000 of 60,000 characters." in alone.call_sync({"rows": 2_000})


def test_the_sink_is_the_teams_one_and_the_smallest_retention_applies(alice: FakeObserver, bob: FakeObserver) -> None:
    tools(alice, max_hours=48)
    tools(bob, max_hours=6, max_mb=2)
    offered = alice.team.service(SPILL_TO_STORE)
    assert offered is stored_spills(default_store(), "team-1") and offered.max_hours == 6


def test_the_store_failing_cuts_the_output_with_the_reason(
    alice: FakeObserver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolcards.errors import StoreError

    mine = tools(alice)

    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("could not reach the server", transient=True)

    monkeypatch.setattr(StoredSpills, "save", unreachable)
    answer = mine["long_text"].call_sync({"rows": 2_000})
    assert "; the whole could not be saved: the team's store could not take it. Narrow the request" in answer


@pytest.fixture
def shared_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """One SQLite store for this process and its children."""
    from toolcards.store import close_default_stores

    store = tmp_path / "team.db"
    monkeypatch.setenv("TOOLCARDS_STORE", str(store))
    close_default_stores()
    return {**os.environ, "TOOLCARDS_STORE": str(store)}
