"""``toolcards info``: where the team lives, what its store holds, the versions; as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.cli.conftest import REPO

pytestmark = pytest.mark.slow

TASKS = '[{"description": "one"}, {"description": "two"}]'
ENTITIES = '[{"name": "Alpha", "entity_type": "service", "description": "a"}]'


def toolcards(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolcards.cli", *args],
        cwd=cwd,
        env=dict(os.environ),  # the test's own workspaces root (TOOLCARDS_WORKSPACES_ROOT)
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def busy_team(team_store: Path, tmp_path: Path) -> Path:
    """A store holding team ``default`` with two tasks, one entity and an event log."""
    for args in (("/update_planning", f"create_tasks={TASKS}"), ("/update_graph", f"create_entities={ENTITIES}")):
        done = toolcards("call", *args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    return team_store


def test_json_says_where_the_team_lives_and_what_it_holds(busy_team: Path, tmp_path: Path) -> None:
    done = toolcards("info", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)

    assert report["store"] == {
        "location": str(busy_team),
        "kind": "sqlite",
        "exists": True,
        "step": "environment",
        "chosen_by": f"environment (TOOLCARDS_STORE, TOOLCARDS_WORKSPACES_ROOT): "
        f"TOOLCARDS_WORKSPACES_ROOT={os.environ['TOOLCARDS_WORKSPACES_ROOT']}",
        "under_root": True,
    }
    assert (report["root"]["path"], report["root"]["step"]) == (os.environ["TOOLCARDS_WORKSPACES_ROOT"], "environment")
    assert [entry["step"] for entry in report["lookup"]] == ["explicit", "environment"]
    team = report["teams"]["default"]
    assert team["#PlanningTool"]["rows"]["tasks"] == 2
    assert team["#KnowledgeGraphTool"]["rows"]["entities"] == 1
    # The event log's head: one event per tool call at least, numbered from 1.
    assert team["#events"]["version"] >= 2 and team["#events"]["rows"]["events"] == team["#events"]["version"]
    assert report["toolcards"] and report["python"] == ".".join(map(str, sys.version_info[:3]))
    assert report["packages"]["pydantic"] and report["packages"]["pykka"]


def test_every_extra_is_listed_with_whether_it_is_installed(busy_team: Path, tmp_path: Path) -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    report = json.loads(toolcards("info", "--json", cwd=tmp_path).stdout)

    assert set(report["extras"]) == set(declared)
    assert {"dashboard", "otel"} <= set(report["extras"])
    assert set(report["extras"]["otel"]["packages"]) == {"opentelemetry-sdk"}
    # "all" is made of the other extras, so it lists their packages.
    assert "psycopg" in report["extras"]["all"]["packages"] and report["extras"]["all"]["installed"]

    text = toolcards("info", cwd=tmp_path).stdout
    for extra in declared:
        assert f"\n  {extra} " in text


def test_the_text_report_names_the_store_the_step_and_the_counts(busy_team: Path, tmp_path: Path) -> None:
    done = toolcards("info", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert f"store  {busy_team} (sqlite)" in done.stdout
    assert "chosen by environment" in done.stdout
    assert "#PlanningTool" in done.stdout and "tasks 2" in done.stdout
    assert "#KnowledgeGraphTool" in done.stdout and "entities 1" in done.stdout
    assert "#events" in done.stdout and "(the event log: its last event)" in done.stdout


def test_without_a_store_it_reports_where_it_looked_then_fails(tmp_path: Path) -> None:
    done = toolcards("info", "--json", cwd=tmp_path)

    assert done.returncode == 1
    report = json.loads(done.stdout)  # the report is printed all the same
    assert report["store"]["exists"] is False and report["teams"] == {}
    assert "toolcards info found no team" in done.stderr
    assert not Path(os.environ["TOOLCARDS_WORKSPACES_ROOT"]).exists()  # nothing was created
