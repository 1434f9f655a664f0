"""A worker process for the claim tests: one member of team ``claims`` on the store of ``TOOLCARDS_STORE``.

Run as ``python -m tests.claim_worker MODE NAME [ARG]``. It joins the team through the front
door, binds a planning card, prints ``ready``, waits for ``go`` on stdin, then:

    race TASK      claims task TASK once; prints ``won`` or ``refused <message>``, then stays
                   on the team until its stdin closes (leaving would release the claim).
    hold TASK      claims task TASK (lease from ``LEASE_S``), prints ``held``, then keeps
                   working (a tool call every 0.1 s) until it is killed.
    drain          takes tasks with next_task until none is ready, completing each; prints
                   ``took <id>`` for each, then ``done``.
"""

from __future__ import annotations

import os
import sys
import time

import toolcards
from toolcards.errors import RetriableError
from toolcards.planning import PlanningTool


def main(mode: str, name: str, arg: str | None) -> None:
    lease_s = float(os.environ.get("LEASE_S", "300"))
    with toolcards.Team("claims") as team:
        tools = {t.name: t for t in team.member(name).factory(PlanningTool(lease_s=lease_s)).tools()}
        say("ready")
        if sys.stdin.readline().strip() != "go":
            return
        if mode == "race":
            try:
                tools["claim_task"].call_sync({"task_id": int(arg or 1)})
                say("won")
            except RetriableError as exc:
                say(f"refused {exc}")
            sys.stdin.read()  # every racer answers before any leaves
        elif mode == "hold":
            tools["claim_task"].call_sync({"task_id": int(arg or 1)})
            say("held")
            while True:
                tools["get_planning_task"].call_sync({"task_id": int(arg or 1)})
                time.sleep(0.1)
        elif mode == "drain":
            while True:
                try:
                    text = tools["next_task"].call_sync({})
                except RetriableError:
                    break
                task_id = int(text.split("You hold task ", 1)[1].split(" ", 1)[0])
                say(f"took {task_id}")
                done = {"id": task_id, "status": "completed", "output": "done"}
                tools["update_planning"].call_sync({"update_tasks": [done]})
            say("done")


def say(line: str) -> None:
    print(line.replace("\n", " "), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
