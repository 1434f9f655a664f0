"""The akgentic-tool side of the comparison: ``python bench/peer/akgentic_driver.py SUITE DIRECTORY``.

Runs in the peer's own venv (see ``bench/peer/__main__.py``), driving akgentic-tool 1.12.0
through its public API only: its cards are bound with its ``ToolFactory`` to a real
akgentic-core agent (an ``Akgent`` started under an ``Orchestrator`` in an akgentic
``ActorSystem``, so the card actors are real pykka actors, as in a team), and the tool
functions from ``get_tools()`` are called from this thread, as ``toolcards_driver.py``
calls ours. No vector store (``vector_store=False``): both sides search by keyword. The
operations and fixtures are those of ``toolcards_driver.py`` (``fixtures.py``). Prints
``RESULT {json}``. Imports nothing from toolcards.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fixtures

SUITES = ("planning", "graph", "workspace", "misc")


class Team:
    """An akgentic ActorSystem with one orchestrator per team and a bench agent in each."""

    def __init__(self) -> None:
        from akgentic.core.actor_system_impl import ActorSystem

        self.system = ActorSystem()

    def agent(self, name: str = "@Agent1") -> Any:
        """A new team (its own orchestrator) and its agent, an ``Akgent`` instance to bind cards to."""
        from akgentic.core.agent import Akgent
        from akgentic.core.agent_config import BaseConfig
        from akgentic.core.agent_state import BaseState
        from akgentic.core.orchestrator import Orchestrator

        class Worker(Akgent[BaseConfig, BaseState]):
            pass

        team = uuid.uuid4()
        orchestrator = self.system.createActor(
            Orchestrator, config=BaseConfig(name="@Orchestrator", role="Orchestrator"), team_id=team, user_id="bench"
        )
        ref = Worker.start(
            config=BaseConfig(name=name, role="Worker"), team_id=team, orchestrator=orchestrator, user_id="bench"
        )
        # The actor object itself is the tools' observer, as inside a running agent.
        return ref._actor_weakref()

    def close(self) -> None:
        self.system.shutdown(timeout=10)


def _tools(factory: Any) -> dict[str, Callable[..., Any]]:
    return {tool.__name__: tool for tool in factory.get_tools()}


def planning(results: fixtures.Results, team: Team) -> None:
    from akgentic.tool.core.factory import ToolFactory
    from akgentic.tool.planning.planning import PlanningTool
    from akgentic.tool.planning.planning_actor import TaskCreate, TaskUpdate, UpdatePlan

    def at(size: int) -> None:
        factory = ToolFactory([PlanningTool(vector_store=False)], observer=team.agent())
        tools = _tools(factory)
        tasks = [
            TaskCreate(
                id=i + 1,
                description=fixtures.description(i),
                owner=fixtures.AGENTS[i % 10],
                status=fixtures.STATUSES[i % 4],
            )
            for i in range(size)
        ]
        tools["update_planning"](UpdatePlan(create_tasks=tasks))
        middle, counter = size // 2, iter(range(10**9))
        if size in fixtures.UPDATE_SIZES:

            def update() -> object:
                i = next(counter)
                change = TaskUpdate(id=middle, status="started" if i % 2 else "pending", output=f"run {i}")
                return tools["update_planning"](UpdatePlan(update_tasks=[change]))

            results.add(f"planning update 1 task, {size:,} tasks", fixtures.sample(update))
        hits = len(tools["search_planning"](query=fixtures.broad_query(0), mode="keyword"))
        results.add(
            f"planning keyword search, {size:,} tasks",
            fixtures.sample(
                lambda: tools["search_planning"](query=fixtures.broad_query(next(counter)), mode="keyword")
            ),
            f"query matching every task; {hits} hits returned",
        )
        if size in fixtures.RENDER_SIZES:
            (context,) = factory.get_context_states()
            results.add(f"planning context render, {size:,} tasks", fixtures.sample(lambda: context().render_full()))

    for size in fixtures.BOARD_SIZES:
        at(size)


def graph(results: fixtures.Results, team: Team) -> None:
    from akgentic.tool.core.factory import ToolFactory
    from akgentic.tool.knowledge_graph import KnowledgeGraphTool
    from akgentic.tool.knowledge_graph.models import EntityCreate, EntityUpdate, ManageGraph, RelationCreate

    def at(size: int) -> None:
        factory = ToolFactory([KnowledgeGraphTool(vector_store=False)], observer=team.agent())
        tools = _tools(factory)
        entities = [EntityCreate(**fixtures.entity(i)) for i in range(size)]
        relations = [RelationCreate(**r) for i in range(size) if (r := fixtures.relation(i))]
        tools["update_graph"](ManageGraph(create_entities=entities, create_relations=relations))
        target, counter = fixtures.entity(size // 2)["name"], iter(range(10**9))

        def update() -> object:
            change = EntityUpdate(name=target, description=f"changed {next(counter)}")
            return tools["update_graph"](ManageGraph(update_entities=[change]))

        results.add(f"graph update 1 entity, {size:,} entities", fixtures.sample(update))
        (context,) = factory.get_context_states()
        results.add(f"graph summary, {size:,} entities", fixtures.sample(lambda: context().render_full()))

    for size in fixtures.GRAPH_SIZES:
        at(size)


def workspace(results: fixtures.Results, team: Team) -> None:
    from akgentic.tool.core.factory import ToolFactory
    from akgentic.tool.workspace import WorkspaceTool

    def at(size: int) -> None:
        card = WorkspaceTool(workspace_id=f"peer-tree-{size}")
        tools = _tools(ToolFactory([card], observer=team.agent()))
        fixtures.build_tree(card._workspace.root, size)  # where the card put its tree
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


def misc(results: fixtures.Results, team: Team) -> None:
    from akgentic.tool.core import COMMAND, TOOL_CALL, BaseToolParam, Channels, ToolCard
    from akgentic.tool.core.factory import ToolFactory
    from akgentic.tool.workspace import WorkspaceTool

    agent = team.agent()
    from akgentic.tool import sandbox

    if sandbox.SANDBOX_BACKEND.__name__ == "DockerBackend" and not _docker_answers():
        # 1.12.0 runs commands only through its SANDBOX_BACKEND, Docker by default; a
        # backend of our own making would measure our code, not the peer's.
        results.skip("exec echo hello", "akgentic-tool 1.12.0 runs commands only in Docker, and no daemon answers here")
    else:
        card = WorkspaceTool(workspace_id="peer-misc", workspace_exec=True)
        tools = _tools(ToolFactory([card], observer=agent))
        results.add(
            "exec echo hello",
            fixtures.sample(lambda: tools["workspace_exec"](cmd="echo hello"), repeat=60),
            f"workspace_exec on {sandbox.SANDBOX_BACKEND.__name__}",
        )

    def ping(x: int) -> int:
        """Add one."""
        return x + 1

    class PingParam(BaseToolParam):
        expose: set[Channels] = {TOOL_CALL, COMMAND}

    class PingCard(ToolCard):
        ping: PingParam | bool = True

        def get_tools(self) -> list[Callable[..., Any]]:
            return [ping]

        def get_commands(self) -> dict[type[BaseToolParam], Callable[..., Any]]:
            return {PingParam: ping}

    registry = ToolFactory([PingCard()]).get_command_registry()
    results.add("command dispatch /ping 1", fixtures.sample(lambda: registry.dispatch("/ping 1"), repeat=5000))
    counter = iter(range(10**9))

    def bind() -> object:
        return ToolFactory([WorkspaceTool(workspace_id=f"bind-{next(counter)}")], observer=agent)

    results.add("first workspace card bind", fixtures.sample(bind, repeat=30), "a new workspace each time")


def _docker_answers() -> bool:
    import subprocess

    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def main() -> None:
    suite, directory = sys.argv[1], Path(sys.argv[2])
    os.environ["AKGENTIC_WORKSPACES_ROOT"] = str(directory / "workspaces")
    team = Team()
    results = fixtures.Results()
    try:
        if suite == "planning":
            planning(results, team)
        elif suite == "graph":
            graph(results, team)
        elif suite == "workspace":
            workspace(results, team)
        elif suite == "misc":
            misc(results, team)
        else:
            raise SystemExit(f"unknown suite {suite!r}; one of {', '.join(SUITES)}")
    finally:
        results.emit()
        team.close()


if __name__ == "__main__":
    main()
