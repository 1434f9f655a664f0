"""The toolcards side of the comparison: ``python bench/peer/toolcards_driver.py SUITE DIRECTORY``.

Every call is a tool call as a model makes it (``Tool.call_sync``; on the tool-call channel
where the tool is exposed there, else as a command), on cards bound to a
:class:`~toolcards.testing.FakeObserver`; state is in a SQLite store under ``DIRECTORY``.
Prints ``RESULT {json}`` (see ``fixtures.Results``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import fixtures

SUITES = ("planning", "graph", "workspace", "misc")


def _tools(cards: list[Any], observer: Any) -> dict[str, Callable[..., object]]:
    from toolcards import ToolFactory
    from toolcards.core._channels import Channels

    def caller(tool: Any) -> Callable[..., object]:
        channel = Channels.TOOL_CALL if Channels.TOOL_CALL in tool.channels else Channels.COMMAND

        def call(**arguments: Any) -> object:
            return tool.call_sync(arguments, channel=channel)

        return call

    return {tool.name: caller(tool) for tool in ToolFactory(cards, observer=observer).tools()}


def planning(results: fixtures.Results, system: Any) -> None:
    from toolcards.planning import PlanningTool, TaskCreate
    from toolcards.testing import FakeObserver

    def at(size: int) -> None:
        card = PlanningTool()
        tools = _tools([card], FakeObserver("Agent1", f"peer-board-{size}", system=system))
        tasks = [
            TaskCreate(
                description=fixtures.description(i),
                owner=fixtures.AGENTS[i % 10],
                status=fixtures.STATUSES[i % 4],  # type: ignore[arg-type]
            )
            for i in range(size)
        ]
        card.board.update("@Setup", create=tasks).get()
        middle, counter = size // 2, iter(range(10**9))
        if size in fixtures.UPDATE_SIZES:

            def update() -> object:
                i = next(counter)
                change = {"id": middle, "status": "started" if i % 2 else "pending", "output": f"run {i}"}
                return tools["update_planning"](update_tasks=[change])

            results.add(f"planning update 1 task, {size:,} tasks", fixtures.sample(update))
        hits = str(tools["search_planning"](query=fixtures.broad_query(0))).count("\n")
        results.add(
            f"planning keyword search, {size:,} tasks",
            fixtures.sample(lambda: tools["search_planning"](query=fixtures.broad_query(next(counter)))),
            f"query matching every task; {hits} lines of answer",
        )
        if size in fixtures.RENDER_SIZES:
            results.add(f"planning context render, {size:,} tasks", fixtures.sample(tools["get_planning"]))

    for size in fixtures.BOARD_SIZES:
        at(size)


def graph(results: fixtures.Results, system: Any) -> None:
    from toolcards.knowledge_graph import EntityCreate, KnowledgeGraphTool, RelationCreate
    from toolcards.testing import FakeObserver

    def at(size: int) -> None:
        card = KnowledgeGraphTool()
        tools = _tools([card], FakeObserver("Agent1", f"peer-graph-{size}", system=system))
        entities = [EntityCreate(**fixtures.entity(i)) for i in range(size)]
        relations = [RelationCreate(**r) for i in range(size) if (r := fixtures.relation(i))]
        report = card.graph.update("@Setup", create_entities=entities, create_relations=relations).get()
        assert not report.errors, report.errors[:3]
        target, counter = fixtures.entity(size // 2)["name"], iter(range(10**9))

        def update() -> object:
            change = {"name": target, "description": f"changed {next(counter)}"}
            return tools["update_graph"](update_entities=[change])

        results.add(f"graph update 1 entity, {size:,} entities", fixtures.sample(update))
        results.add(f"graph summary, {size:,} entities", fixtures.sample(tools["get_graph"]))

    for size in fixtures.GRAPH_SIZES:
        at(size)


def workspace(results: fixtures.Results, system: Any, directory: Path) -> None:
    from toolcards.testing import FakeObserver
    from toolcards.workspace import WorkspaceTool

    def at(size: int) -> None:
        name = f"peer-tree-{size}"
        fixtures.build_tree(directory / "workspaces" / name, size)
        tools = _tools([WorkspaceTool(workspace_id=name)], FakeObserver("Agent1", name, system=system))
        if size == fixtures.TREE_SIZES[0]:
            results.add("workspace read 2 KB", fixtures.sample(lambda: tools["workspace_read"](path="small.txt")))
            counter, created = iter(range(10**9)), []

            def write_new() -> object:
                created.append(f"new/file_{next(counter)}.txt")
                return tools["workspace_write"](path=created[-1], content=fixtures.SMALL)

            results.add(
                "workspace write new 2 KB",
                fixtures.sample(write_new, undo=lambda: tools["workspace_delete"](path=created.pop())),
                "deleted untimed after each",
            )
            results.add(
                f"workspace list, {size:,} files", fixtures.sample(lambda: tools["workspace_list"](path="tree"))
            )
        results.add(
            f"workspace glob **/*.py, {size:,} files",
            fixtures.sample(lambda: tools["workspace_glob"](pattern="**/*.py", path="tree")),
        )
        results.add(
            f"workspace grep, {size:,} files",
            fixtures.sample(lambda: tools["workspace_grep"](pattern=fixtures.GREP_PATTERN, path="tree")),
        )

    for size in fixtures.TREE_SIZES:
        at(size)


def misc(results: fixtures.Results, system: Any) -> None:
    from toolcards import COMMAND, TOOL_CALL, BaseToolParam, Channels, ToolCard, ToolFactory, capability
    from toolcards.sandbox import ExecTool
    from toolcards.testing import FakeObserver
    from toolcards.workspace import WorkspaceTool

    observer = FakeObserver("Agent1", "peer-misc", system=system)
    tools = _tools([ExecTool(mode="local")], observer)
    results.add(
        "exec echo hello",
        fixtures.sample(lambda: tools["exec_command"](cmd="echo hello"), repeat=60),
        "local, no sandbox",
    )

    class PingParam(BaseToolParam):
        expose: set[Channels] = {TOOL_CALL, COMMAND}

    class PingCard(ToolCard):
        kind: ClassVar[str] = "peer_ping"
        ping: PingParam | bool = True

        @capability("ping", name="ping")
        def ping_tool(self, x: int) -> int:
            """Add one."""
            return x + 1

    registry = ToolFactory([PingCard()]).command_registry()
    results.add("command dispatch /ping 1", fixtures.sample(lambda: registry.dispatch("/ping 1"), repeat=5000))
    counter = iter(range(10**9))

    def bind() -> object:
        return ToolFactory([WorkspaceTool(workspace_id=f"bind-{next(counter)}")], observer=observer)

    results.add("first workspace card bind", fixtures.sample(bind, repeat=30), "a new workspace each time")


def main() -> None:
    suite, directory = sys.argv[1], Path(sys.argv[2])
    os.environ["TOOLCARDS_WORKSPACES_ROOT"] = str(directory / "workspaces")
    os.environ["TOOLCARDS_STORE"] = str(directory / "state.db")
    from toolcards.actors import ActorSystem

    results = fixtures.Results()
    with ActorSystem() as system:
        if suite == "planning":
            planning(results, system)
        elif suite == "graph":
            graph(results, system)
        elif suite == "workspace":
            workspace(results, system, directory)
        elif suite == "misc":
            misc(results, system)
        else:
            raise SystemExit(f"unknown suite {suite!r}; one of {', '.join(SUITES)}")
    results.emit()
    import pykka

    pykka.ActorRegistry.stop_all()
    from toolcards.store import close_default_stores

    close_default_stores()


if __name__ == "__main__":
    main()
