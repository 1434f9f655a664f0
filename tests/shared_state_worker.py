"""A worker process for the shared-state tests: one agent of team ``shared`` writing its store.

Run as ``python -m tests.shared_state_worker MODE NAME COUNT``. It binds the real cards
through a ``ToolFactory`` on the store named by ``TOOLCARDS_STORE`` (SQLite file or
PostgreSQL URL), prints ``ready``, waits for ``go`` on stdin, then makes COUNT calls,
printing one line per acknowledged change as soon as the tool returns (so a parent that
``kill -9``s it knows exactly what it was told succeeded), then ``done``. On ``report`` it
prints what its own next reads show, then exits.

Modes:
    planning  one ``update_planning`` create per call; prints ``ack <task id>``.
    graph     one ``update_graph`` batch of two entities per call; prints ``ack <name>``.
"""

from __future__ import annotations

import re
import sys

from toolcards.actors import ActorSystem
from toolcards.core._factory import ToolFactory
from toolcards.store import store_journals
from toolcards.testing import FakeObserver

TEAM = "shared"


def main(mode: str, name: str, count: int) -> None:
    from toolcards.knowledge_graph import KnowledgeGraphTool
    from toolcards.planning import PlanningTool

    with ActorSystem(journal=store_journals()) as system:
        agent = FakeObserver(name, TEAM, system=system)
        cards = [PlanningTool()] if mode == "planning" else [KnowledgeGraphTool()]
        tools = {tool.name: tool for tool in ToolFactory(cards, observer=agent).tools()}
        say("ready")
        if sys.stdin.readline().strip() != "go":
            return
        for i in range(count):
            if mode == "planning":
                answer = tools["update_planning"].call_sync({"create_tasks": [{"description": f"{name} task {i}"}]})
                match = re.fullmatch(r"Created task (\d+)\.", str(answer))
                assert match is not None, answer
                say(f"ack {match[1]}")
            else:
                entities = [
                    {"name": f"{name}-{i}-{part}", "entity_type": "note", "description": f"{name} wrote {part}"}
                    for part in ("a", "b")
                ]
                tools["update_graph"].call_sync({"create_entities": entities})
                for entity in entities:
                    say(f"ack {entity['name']}")
        say("done")
        if sys.stdin.readline().strip() != "report":
            return
        if mode == "planning":
            plan = str(tools["get_planning"].call_sync({}))
            say(f"render {plan.splitlines()[0]}")
        else:
            say(f"render {str(tools['get_graph'].call_sync({})).splitlines()[0]}")


def say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
