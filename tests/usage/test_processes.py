"""Two OS processes of one team recording into one store: no call is lost or counted twice."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from toolcards.store import SQLiteStore, StoreLedger

WORKER = textwrap.dedent(
    """
    import sys
    from toolcards import ToolFactory
    from toolcards.actors import ActorSystem
    from toolcards.planning import PlanningTool
    from toolcards.store import store_ledgers
    from toolcards.testing import FakeObserver

    name, calls = sys.argv[1], int(sys.argv[2])
    with ActorSystem(ledger=store_ledgers(interval_s=0.01)) as system:
        agent = FakeObserver(name, "team-x", system=system)
        search = {t.name: t for t in ToolFactory([PlanningTool()], observer=agent).tools()}["search_planning"]
        for index in range(calls):
            search.call_sync({"query": f"word{index}"})
    print("ok")
    """
)


def _run_workers(env: dict[str, str], calls: int) -> None:
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, name, str(calls)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for name in ("Alice", "Bob")
    ]
    for worker in workers:
        out, err = worker.communicate(timeout=240)
        assert worker.returncode == 0, err.decode()[-2000:]
        assert out.decode().strip() == "ok"


def test_two_processes_add_to_one_sqlite_ledger(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    env = {"TOOLCARDS_STORE": str(path), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path("src").resolve())}
    _run_workers(env, 300)
    store = SQLiteStore(path)
    try:
        report = StoreLedger(store, "team-x").usage()
        assert report.total.calls == 600
        assert {name: totals.calls for name, totals in report.by_member.items()} == {"@Alice": 300, "@Bob": 300}
        assert report.by_tool["search_planning"].argument_tokens >= 600
    finally:
        store.close()


def test_two_processes_add_to_one_postgres_ledger(postgres_url: str) -> None:
    pytest.importorskip("psycopg")
    from toolcards.store._postgres import PostgresStore

    env = {"TOOLCARDS_STORE": postgres_url, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path("src").resolve())}
    _run_workers(env, 100)
    store = PostgresStore(postgres_url)
    try:
        report = StoreLedger(store, "team-x").usage()
        assert {name: totals.calls for name, totals in report.by_member.items()} == {"@Alice": 100, "@Bob": 100}
    finally:
        store.close()
