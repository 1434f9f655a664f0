"""The dashboard's server time, and what open dashboards cost the tool calls of the team.

Rows (median milliseconds):

* the board's data at 1,000 tasks: rendered (the view plus its JSON), and served from the
  hub's cache (a version check, as when the board did not change);
* the graph's data at 2,000 entities and 2,000 relations: with a cold layout (the first
  look), after one entity was added (the layout starts from the last one), and cached;
* a tool call (``get_planning_task``: an actor ask and the store's version check) on a
  team in a SQLite store, with no dashboard open, then with 10 browsers listening to a
  dashboard of the same team in this process (one poll of the store every 0.25 s).

Targets on the reference machine: the board and the graph within 100 ms of server time; the
tool call within 10 % of its time without dashboards. ``run()`` returns ``(name, median_ms,
note)`` rows; nothing is asserted.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.timing import median_ms

__all__ = ["run"]

TASKS = 1_000
ENTITIES = 2_000
LISTENERS = 10


def _json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def run() -> list[tuple[str, float, str]]:
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["TOOLCARDS_WORKSPACES_ROOT"] = str(Path(scratch) / "workspaces")
        os.environ["TOOLCARDS_STORE"] = str(Path(scratch) / "state.db")
        try:
            return _run()
        finally:
            import pykka

            from toolcards.store import close_default_stores

            pykka.ActorRegistry.stop_all()
            close_default_stores()
            os.environ.pop("TOOLCARDS_STORE", None)


def _run() -> list[tuple[str, float, str]]:
    from toolcards import ToolFactory
    from toolcards.actors._system import ActorSystem
    from toolcards.core._observer import TeamAgent
    from toolcards.dashboard import TeamSource
    from toolcards.dashboard._hub import DashboardHub
    from toolcards.knowledge_graph import KnowledgeGraphTool
    from toolcards.planning import PlanningTool
    from toolcards.store._journal import store_journals

    rows: list[tuple[str, float, str]] = []
    with ActorSystem(journal=store_journals()) as system:
        team = system.team("bench")
        agent = TeamAgent("Ann", team)
        tools = {
            tool.name: tool for tool in ToolFactory([PlanningTool(), KnowledgeGraphTool()], observer=agent).tools()
        }
        for start in range(0, TASKS, 100):
            tools["update_planning"].call_sync(
                {
                    "create_tasks": [
                        {"description": f"Task {i}: implement part {i} of the parser", "owner": f"@Agent-{i % 7}"}
                        for i in range(start, start + 100)
                    ]
                }
            )
        for start in range(0, ENTITIES, 200):
            tools["update_graph"].call_sync(
                {
                    "create_entities": [
                        {"name": f"entity-{i}", "entity_type": f"type-{i % 6}", "observations": [f"fact {i}"]}
                        for i in range(start, start + 200)
                    ],
                    "create_relations": [
                        {
                            "from_entity": f"entity-{i}",
                            "to_entity": f"entity-{(i * 7 + 1) % max(i, 1)}",
                            "relation_type": "depends_on",
                        }
                        for i in range(max(start, 1), start + 200)
                    ],
                }
            )
        source = TeamSource(team, [PlanningTool(), KnowledgeGraphTool()])
        hub = DashboardHub(source)
        asyncio.run(hub.render("planning.board"))

        board = median_ms(lambda: _json(source.render("planning.board")), repeat=30, warmup=3)
        rows.append((f"board data, {TASKS:,} tasks, rendered", board, "view + JSON (target <= 100 ms)"))
        cached = median_ms(lambda: _cached(hub, "planning.board"), repeat=100, warmup=5)
        rows.append((f"board data, {TASKS:,} tasks, unchanged", cached, "the hub's cache: a version check + JSON"))

        started = time.perf_counter()
        _json(source.render("knowledge_graph.graph"))
        cold = (time.perf_counter() - started) * 1000
        rows.append(
            (
                f"graph data, {ENTITIES:,} entities, layout from nothing",
                cold,
                "once per process, in the background at start (TeamSource.warm), not in a request; one run",
            )
        )
        added = []
        for index in range(5):
            tools["update_graph"].call_sync(
                {
                    "create_entities": [{"name": f"new-{index}", "entity_type": "type-0"}],
                    "create_relations": [
                        {"from_entity": f"new-{index}", "to_entity": "entity-5", "relation_type": "uses"}
                    ],
                }
            )
            started = time.perf_counter()
            _json(source.render("knowledge_graph.graph"))
            added.append((time.perf_counter() - started) * 1000)
        added.sort()
        rows.append(
            (
                f"graph data, {ENTITIES:,} entities, after a change",
                added[len(added) // 2],
                "layout from the last one (target <= 100 ms)",
            )
        )
        asyncio.run(hub.render("knowledge_graph.graph"))
        graph_cached = median_ms(lambda: _cached(hub, "knowledge_graph.graph"), repeat=50, warmup=3)
        rows.append((f"graph data, {ENTITIES:,} entities, unchanged", graph_cached, "the hub's cache"))

        call = tools["get_planning_task"]

        def one_call() -> None:
            call.call_sync({"task_id": 5})

        # Interleaved rounds, so a noisy neighbour on the machine weighs on both alike.
        quiet_rounds, busy_rounds = [], []
        listening = _listening(hub, LISTENERS)
        for _ in range(3):
            quiet_rounds.append(median_ms(one_call, repeat=1500, warmup=100))
            with listening:
                busy_rounds.append(median_ms(one_call, repeat=1500, warmup=100))
        quiet, busy = statistics.median(quiet_rounds), statistics.median(busy_rounds)
        rows.append(("tool call, no dashboard open", quiet, "get_planning_task: actor ask + store check"))
        change = (busy - quiet) / quiet * 100
        rows.append((f"tool call, {LISTENERS} dashboards open", busy, f"{change:+.1f} % (target within 10 %)"))
    return rows


def _cached(hub: Any, name: str) -> bytes:
    """What the server does for a view that did not change: the version check, the cache, JSON."""
    version = hub.source.version(name)
    stamp, data = hub._renders[(name, ())]
    assert stamp == version
    return _json(data)


class _listening:
    """A dashboard server in a thread, with ``count`` event streams reading it."""

    def __init__(self, hub: Any, count: int) -> None:
        self.hub = hub
        self.count = count
        self._threads: list[threading.Thread] = []
        self._ready = threading.Event()
        self._state: dict[str, Any] = {}

    def __enter__(self) -> None:
        import anyio

        self._threads = []
        self._ready.clear()

        from toolcards.dashboard import serve_dashboard

        async def main() -> None:
            self._state["stop"], self._state["loop"] = anyio.Event(), asyncio.get_running_loop()

            def ready(url: str) -> None:
                self._state["url"] = url
                self._ready.set()

            await serve_dashboard(self.hub, host="127.0.0.1", port=0, stop=self._state["stop"], on_ready=ready)

        server = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
        server.start()
        self._threads.append(server)
        assert self._ready.wait(30), "the dashboard did not start"
        url = self._state["url"]
        origin, _, query = url.partition("/?")
        token = query.removeprefix("token=")
        opened = threading.Barrier(self.count + 1)

        def listen() -> None:
            request = urllib.request.Request(f"{origin}/api/events", headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(request, timeout=60) as stream:
                stream.readline()
                opened.wait()
                while stream.readline():
                    pass

        for _ in range(self.count):
            thread = threading.Thread(target=listen, daemon=True)
            thread.start()
        opened.wait(30)
        time.sleep(1.0)  # the hub polls from now on

    def __exit__(self, *exc_info: object) -> None:
        self._state["loop"].call_soon_threadsafe(self._state["stop"].set)
        for thread in self._threads:
            thread.join(30)
        self.hub._closed = False  # serve it again in the next round
