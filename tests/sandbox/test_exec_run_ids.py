"""Run ids are numbered in the team's store: after a restart, or in another process of the
team, an id a model remembers never names a newer run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import toolcards
from tests.sandbox.conftest import marker
from toolcards.errors import RetriableError
from toolcards.sandbox import ExecTool
from toolcards.sandbox._run_numbers import StoredRunNumbers
from toolcards.sandbox._runs import RunRegistry
from toolcards.store import MemoryStore

FIRST_PROCESS = """
import sys
import toolcards
from toolcards.sandbox import ExecTool

with toolcards.Team("restarts") as team:
    card = ExecTool(mode="local", allowed_commands=[])
    tools = {tool.name: tool for tool in team.member("Ann").factory(card).tools()}
    print(tools["exec_command"].call_sync({"cmd": "sleep " + sys.argv[1], "background": True}))
"""


def run_id_of(started: str) -> str:
    return started.split("Started background run ", 1)[1].split(" ", 1)[0]


def test_an_id_from_before_a_restart_names_no_new_run(isolated_root: Path) -> None:
    before = subprocess.run(
        [sys.executable, "-c", FIRST_PROCESS, marker()], capture_output=True, text=True, timeout=60, check=True
    )
    old = run_id_of(before.stdout)
    assert old == "r1"
    with toolcards.Team("restarts") as team:
        card = ExecTool(mode="local", allowed_commands=[])
        tools = {tool.name: tool for tool in team.member("Ann").factory(card).tools()}
        new = run_id_of(tools["exec_command"].call_sync({"cmd": f"sleep {marker()}", "background": True}))
        assert new != old
        # The model continuing the old conversation stops its old dev server: not the new run.
        with pytest.raises(RetriableError, match=f"No background run '{old}' of yours. Your runs: {new}."):
            tools["exec_stop"].call_sync({"run_id": old})
        assert "stopped: stop requested" in tools["exec_stop"].call_sync({"run_id": new})


def test_numbers_are_the_teams_own_and_stay_short() -> None:
    store = MemoryStore()
    first = RunRegistry(numbers=StoredRunNumbers(store, "ours"))
    assert [new_run(first) for _ in range(3)] == ["r1", "r2", "r3"]
    # A registry started again (a restart) draws on from the store; another team starts at r1.
    assert new_run(RunRegistry(numbers=StoredRunNumbers(store, "ours"))) == "r4"
    assert new_run(RunRegistry(numbers=StoredRunNumbers(store, "theirs"))) == "r1"


def test_a_refused_run_takes_no_number() -> None:
    registry = RunRegistry(numbers=StoredRunNumbers(MemoryStore(), "t"))
    assert new_run(registry, "@Ann", max_running=1) == "r1"
    with pytest.raises(RetriableError, match="limited to 1 at once"):
        new_run(registry, "@Ann", max_running=1)
    assert new_run(registry, "@Bob", max_running=1) == "r2"


def new_run(registry: RunRegistry, owner: str = "@Ann", *, max_running: int = 9) -> str:
    return registry.add(owner, "true", "", keep_chars=1_000, max_running=max_running).run_id
