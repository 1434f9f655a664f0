"""Fixtures of the dashboard's tests: a served team in real processes, a real browser."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dashboard.servers import TEAM_CONFIG, Process, serve, team_env

CHROMIUM = os.environ.get("TOOLCARDS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root
    "--headless",
    "--disable-gpu",
    # The network is closed: no update checks, no sync, nothing to wait for.
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "dashboard"


@pytest.fixture(scope="module")
def team_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dashboard-team")
    (path / "team.yaml").write_text(TEAM_CONFIG)
    return path


@pytest.fixture(scope="module")
def served(team_dir: Path) -> Iterator[Process]:
    """``toolcards serve --transport http`` of a team with a board, a graph and a workspace."""
    process = serve(team_dir / "team.yaml", team_env(team_dir))
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium; .ci/run installs it)")
    playwright = pytest.importorskip("playwright.sync_api", reason="the dev extra's playwright is not installed")
    with playwright.sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: object, served: Process) -> Iterator[object]:
    """A 1280×800 page on the served team's dashboard, opened once with the printed token."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(f"{served.origin}/?token={served.token}")
    try:
        yield page
    finally:
        context.close()
