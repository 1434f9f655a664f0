"""Many agents changing one file at once: every edit is applied or refused, none is lost."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from toolcards import TOOL_CALL, RetriableError, Tool, ToolFactory
from toolcards.actors._system import ActorSystem
from toolcards.testing import FakeObserver
from toolcards.workspace._tool import WorkspaceTool

AGENTS = 10


def agent_tools(system: ActorSystem, name: str) -> dict[str, Tool]:
    factory = ToolFactory([WorkspaceTool()], observer=FakeObserver(name, "team-1", system=system))
    return {tool.name: tool for tool in factory.tools()}


@pytest.fixture
def shared_file(system: ActorSystem, isolated_root: Path) -> Path:
    first = agent_tools(system, "Setup")
    first["workspace_write"].call_sync(
        {"path": "tasks.md", "content": "".join(f"task {n}: todo\n" for n in range(AGENTS))}, channel=TOOL_CALL
    )
    return isolated_root / "team-1" / "tasks.md"


def test_ten_agents_editing_one_file_lose_no_edit(system: ActorSystem, shared_file: Path) -> None:
    tools = [agent_tools(system, f"Agent{n}") for n in range(AGENTS)]
    read_all = threading.Barrier(AGENTS)
    first_round: list[str] = []
    attempts = [0] * AGENTS
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        mine = tools[n]
        edit = {"path": "tasks.md", "old_string": f"task {n}: todo", "new_string": f"task {n}: done by Agent{n}"}
        try:
            while True:
                mine["workspace_read"].call_sync({"path": "tasks.md"}, channel=TOOL_CALL)
                if attempts[n] == 0:
                    # Everyone has read the same version before anyone edits.
                    read_all.wait(timeout=30)
                attempts[n] += 1
                try:
                    mine["workspace_edit"].call_sync(edit, channel=TOOL_CALL)
                except RetriableError as exc:
                    assert str(exc).startswith("Call workspace_read on 'tasks.md' again"), exc
                    assert "It was changed by @Agent" in str(exc)
                    if attempts[n] == 1:
                        with lock:
                            first_round.append("refused")
                    continue
                if attempts[n] == 1:
                    with lock:
                        first_round.append("applied")
                return
        except BaseException as exc:
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(AGENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    assert sorted(first_round) == ["applied"] + ["refused"] * (AGENTS - 1)
    content = shared_file.read_text()
    assert content == "".join(f"task {n}: done by Agent{n}\n" for n in range(AGENTS))


def test_readers_never_see_a_torn_file(system: ActorSystem, shared_file: Path) -> None:
    """Readers on another thread only ever see a whole version, never a half-written one."""
    tools = agent_tools(system, "Writer")
    versions = [f"version {v}\n" * 2_000 for v in range(30)]
    seen: set[str] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.add(shared_file.read_text())

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for version in versions:
            tools["workspace_read"].call_sync({"path": "tasks.md", "limit": 5000}, channel=TOOL_CALL)
            tools["workspace_write"].call_sync({"path": "tasks.md", "content": version}, channel=TOOL_CALL)
    finally:
        done.set()
        watcher.join()
    initial = "".join(f"task {n}: todo\n" for n in range(AGENTS))
    assert seen <= {initial, *versions}
