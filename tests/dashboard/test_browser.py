"""The dashboard in a real browser (Debian's chromium through Playwright), against a real
``toolcards serve`` process changed by real MCP clients and by members in processes of their own.

The only waits are Playwright's bounded ``expect(...)`` waits: a change must show within
one second, without a reload. Screenshots of every view at 1280×800 go to
``tests/artifacts/dashboard/`` (not committed).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.conftest import ARTIFACTS
from tests.dashboard.servers import Process, call_tool, connected, team_env
from tests.team.presence_worker import Worker

pytestmark = pytest.mark.slow

LIVE_S = 1.0
"""A change must be on the open page within this long."""
TAB_S = 5.0
"""A tab shown for the first time loads within this long (a loaded machine lays out a graph slowly)."""
PRESENCE_MS = 30_000
"""Bound on a member's arrival or departure reaching the page (a killed process's: its 2 s TTL)."""


def expect() -> Any:
    from playwright.sync_api import expect

    return expect


def open_tab(page: Any, name: str) -> None:
    page.click(f"#tab-{name}")
    expect()(page.locator(f"#panel-{name}")).to_be_visible()


def test_a_task_created_over_mcp_appears_within_a_second_and_moves_column(page: Any, served: Process) -> None:
    expect()(page.locator("#live")).to_have_attribute("data-state", "live", timeout=10_000)
    expect()(page.locator("#team")).to_have_text("lookout")

    call_tool(served.url, "update_planning", {"create_tasks": [{"description": "Write the release notes"}]})
    task = page.locator(".column[data-status='pending'] .task", has_text="Write the release notes")
    expect()(task).to_be_visible(timeout=LIVE_S * 1000)
    task_id = task.get_attribute("data-task-id")

    call_tool(  # a synonym, as models send them: the board holds the status it stands for
        served.url,
        "update_planning",
        {"update_tasks": [{"id": int(task_id or 0), "status": "doing", "owner": "@Bob"}]},
        agent="Bob",
    )
    moved = page.locator(f".column[data-status='in_progress'] .task[data-task-id='{task_id}']")
    expect()(moved).to_be_visible(timeout=LIVE_S * 1000)
    expect()(moved).to_contain_text("@Bob")
    expect()(page.locator(f".column[data-status='pending'] .task[data-task-id='{task_id}']")).to_have_count(0)

    moved.click()  # every field of the task
    drawer = page.locator("#drawer")
    expect()(drawer).to_be_visible()
    expect()(drawer).to_contain_text("Write the release notes")
    expect()(drawer).to_contain_text("@Alice")  # the creator
    expect()(drawer.locator("dd[data-status='in_progress']")).to_have_text("In progress")
    page.keyboard.press("Escape")
    expect()(drawer).to_be_hidden()


def test_the_graph_shows_entities_and_relations_and_a_click_shows_observations(page: Any, served: Process) -> None:
    call_tool(
        served.url,
        "update_graph",
        {
            "create_entities": [
                {
                    "name": "auth-service",
                    "entity_type": "service",
                    "description": "Issues login tokens",
                    "observations": ["Tokens last 15 minutes", "Written in Go"],
                    "is_root": True,
                },
                {"name": "user-db", "entity_type": "database", "observations": ["PostgreSQL 16"]},
            ],
            "create_relations": [
                {"from_entity": "auth-service", "to_entity": "user-db", "relation_type": "reads_from"}
            ],
        },
    )
    open_tab(page, "graph")
    node = page.locator("#graph-svg .node[data-name='auth-service']")
    expect()(node).to_be_visible(timeout=TAB_S * 1000)
    expect()(page.locator("#graph-svg .node.root[data-name='auth-service']")).to_have_count(1)
    expect()(page.locator("#graph-svg .edge-label", has_text="reads_from")).to_have_count(1)

    node.click()
    detail = page.locator("#graph-detail")
    expect()(detail.locator("h2")).to_have_text("auth-service")
    expect()(detail.locator(".observations li")).to_have_text(["Tokens last 15 minutes", "Written in Go"])
    expect()(detail.locator(".relations")).to_contain_text("reads_from")

    page.fill("#graph-search", "user-db")  # the graph's own search
    expect()(page.locator("#graph-svg .node.hit[data-name='user-db']")).to_be_visible(timeout=5_000)


def test_the_tool_call_log_shows_every_call_and_filters_by_agent_and_tool(page: Any, served: Process) -> None:
    call_tool(served.url, "search_planning", {"query": "release"}, agent="Carol")
    with pytest.raises(AssertionError, match="failed"):
        call_tool(served.url, "get_planning_task", {"task_id": 4242}, agent="Carol")
    open_tab(page, "calls")
    refused = page.locator("#calls tbody tr[data-tool='get_planning_task']", has_text="refused").first
    expect()(refused).to_be_visible(timeout=TAB_S * 1000)
    expect()(refused).to_contain_text("@Carol")
    expect()(refused).to_contain_text("4242")  # the error, as the model read it

    page.select_option("#filter-agent", "@Carol")
    page.select_option("#filter-tool", "search_planning")
    rows = page.locator("#calls tbody tr")
    expect()(rows).to_have_count(1)
    expect()(rows.first).to_contain_text("ok")


def test_the_team_tab_lists_every_process_members_and_drops_those_who_left(
    page: Any, served: Process, team_dir: Path
) -> None:
    env = team_env(team_dir)
    scout = Worker("lookout", "Scout", env, interval_s=0.2, ttl_s=2.0)  # a process of its own
    ghost = Worker("lookout", "Ghost", env, interval_s=0.2, ttl_s=2.0)
    try:
        open_tab(page, "team")
        members = page.locator("#members tbody")
        expect()(members.locator("tr[data-handle='@Scout']")).to_contain_text(str(scout.pid), timeout=PRESENCE_MS)
        expect()(members.locator("tr[data-handle='@Ghost']")).to_be_visible(timeout=PRESENCE_MS)

        with connected(served.url, "Visitor", ("search_planning", {"query": "visiting"})):
            expect()(members.locator("tr[data-handle='@Visitor']")).to_contain_text("mcp_client", timeout=PRESENCE_MS)
            calls = page.locator("#agents-seen tbody tr[data-handle='@Visitor']")
            expect()(calls).to_contain_text("present", timeout=PRESENCE_MS)
        expect()(members.locator("tr[data-handle='@Visitor']")).to_have_count(0, timeout=PRESENCE_MS)
        expect()(calls).to_contain_text("left")  # its calls stay, marked as gone

        assert scout.ask("leave") == "left"
        expect()(members.locator("tr[data-handle='@Scout']")).to_have_count(0, timeout=PRESENCE_MS)
        ghost.kill()
        expect()(members.locator("tr[data-handle='@Ghost']")).to_have_count(0, timeout=PRESENCE_MS)
    finally:
        scout.stop()
        ghost.stop()


def test_a_hostile_file_renders_as_text_and_opens_no_dialog(page: Any, served: Process) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    name = "<img src=x onerror=alert(1)>.md"
    content = "<script>alert('owned')</script>\n<img src=x onerror=alert(2)>"
    call_tool(served.url, "workspace_write", {"path": name, "content": content})

    open_tab(page, "files")
    file_button = page.locator("#tree .file > button", has_text="<img src=x onerror=alert(1)>.md")
    expect()(file_button).to_be_visible(timeout=TAB_S * 1000)
    file_button.click()
    shown = page.locator("#preview pre.file-text")
    expect()(shown).to_have_text(content)
    expect()(page.locator("#preview h2")).to_have_text(name)
    assert page.locator("#preview img, #tree img, #preview script").count() == 0
    assert dialogs == []


def test_overlapping_previews_show_the_file_once(page: Any, served: Process) -> None:
    # A click and a refresh (or two clicks) overlap: the first answer is held back until the
    # second has been shown, then let through. Only the latest preview may fill the box.
    call_tool(served.url, "workspace_write", {"path": "twice.md", "content": "shown once"})
    held: list[Any] = []

    def hold_the_first(route: Any) -> None:
        if held:
            route.continue_()
        else:
            held.append(route)

    page.route("**/api/views/workspace.file*", hold_the_first)
    open_tab(page, "files")
    button = page.locator("#tree .file > button", has_text="twice.md")
    expect()(button).to_be_visible(timeout=TAB_S * 1000)
    button.click()
    while not held:
        page.wait_for_timeout(20)  # until the first request is held (a poll, not a measure)
    button.click()
    shown = page.locator("#preview pre.file-text")
    expect()(shown).to_have_text("shown once")
    with page.expect_response("**/api/views/workspace.file*"):
        held[0].continue_()
    page.evaluate("() => new Promise((done) => setTimeout(done, 200))")  # room for the late answer's turn
    expect()(shown).to_have_count(1)
    expect()(page.locator("#preview h2")).to_have_count(1)


def test_an_image_is_previewed_as_an_image(page: Any, served: Process) -> None:
    import base64

    # A 1×1 PNG written straight to the tree, as a sandboxed command would: no tool saw it.
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    )
    (served.workspaces / "lookout" / "pixel.png").write_bytes(png)
    open_tab(page, "files")
    button = page.locator("#tree .file > button", has_text="pixel.png")
    expect()(button).to_be_visible(timeout=3_000)  # a file no tool wrote: seen by the tree's version
    button.click()
    image = page.locator("#preview img")
    expect()(image).to_be_visible()
    # Visible is not decoded: wait until the browser has loaded it (or failed to: complete
    # with naturalWidth 0), then check it really is the 1-pixel picture.
    page.wait_for_function("() => document.querySelector('#preview img').complete", timeout=10_000)
    assert page.evaluate("() => document.querySelector('#preview img').naturalWidth") == 1


@pytest.fixture(scope="module")
def seeded(served: Process) -> Process:
    """A team with work in every column and a graph worth a picture."""
    call_tool(
        served.url,
        "update_planning",
        {
            "create_tasks": [
                {
                    "id": 101,
                    "description": "Design the CSV parser API",
                    "owner": "@Lead",
                    "status": "completed",
                    "output": "api.md: parse(text, dialect) -> rows",
                },
                {
                    "id": 102,
                    "description": "Implement the tokenizer",
                    "owner": "@Builder-1",
                    "status": "in_progress",
                    "dependencies": [101],
                },
                {
                    "id": 103,
                    "description": "Write property tests for quoting",
                    "owner": "@Builder-2",
                    "dependencies": [102],
                },
                {"id": 104, "description": "Benchmark against the stdlib csv module", "dependencies": [102]},
                {
                    "id": 105,
                    "description": "Support Excel dialect",
                    "status": "cancelled",
                    "output": "Out of scope for 1.0",
                },
            ]
        },
        agent="Lead",
    )
    services = ["gateway", "billing", "search", "notifier", "scheduler"]
    call_tool(
        served.url,
        "update_graph",
        {
            "create_entities": [
                {"name": name, "entity_type": "service", "observations": [f"{name} runs on Kubernetes"]}
                for name in services
            ]
            + [
                {"name": "orders-db", "entity_type": "database"},
                {"name": "events", "entity_type": "queue"},
                {"name": "platform-team", "entity_type": "team", "is_root": True},
            ],
            "create_relations": [
                {"from_entity": name, "to_entity": "events", "relation_type": "publishes_to"} for name in services
            ]
            + [
                {"from_entity": "billing", "to_entity": "orders-db", "relation_type": "reads_from"},
                {"from_entity": "platform-team", "to_entity": "gateway", "relation_type": "owns"},
            ],
        },
        agent="Lead",
    )
    call_tool(
        served.url,
        "workspace_write",
        {"path": "design.md", "content": "# CSV parser\n\nparse(text, dialect) -> rows\n\n- quoting\n- dialects\n"},
        agent="Lead",
    )
    call_tool(served.url, "workspace_write", {"path": "src/parser.py", "content": "def parse(text):\n    ...\n"})
    call_tool(
        served.url,
        "update_planning",
        {"create_tasks": [{"id": 106, "description": "Document the dialect options"}]},
        agent="Lead",
    )
    call_tool(served.url, "claim_task", {"task_id": 106}, agent="Writer")
    return served


def test_the_board_has_a_column_per_status_named_by_the_api_s_words(page: Any, seeded: Process) -> None:
    """Columns carry the four statuses as data (what the API and the tools say) and a label
    for people; a task created with a synonym sits in the column of its status."""
    columns = page.locator(".column")
    expect()(columns).to_have_count(4, timeout=TAB_S * 1000)
    assert [columns.nth(i).get_attribute("data-status") for i in range(4)] == [
        "pending",
        "in_progress",
        "completed",
        "aborted",
    ]
    # The DOM's text: the stylesheet shows headings in capitals.
    headings = [(columns.nth(i).locator("h2").text_content() or "").split(" · ")[0] for i in range(4)]
    assert headings == ["Pending", "In progress", "Completed", "Aborted"]
    expect()(page.locator(".column[data-status='aborted'] .task[data-task-id='105']")).to_be_visible()
    expect()(page.locator(".column[data-status='in_progress'] .task[data-task-id='102']")).to_be_visible()


def test_a_claimed_task_shows_its_holder_and_lease(page: Any, seeded: Process) -> None:
    claimed = page.locator(".column[data-status='in_progress'] .task[data-task-id='106']")
    expect()(claimed).to_be_visible(timeout=TAB_S * 1000)
    expect()(claimed.locator(".chip.owner")).to_have_text("@Writer")
    expect()(claimed.locator(".chip.claim")).to_have_text(re.compile(r"claimed · lease [45] min"))
    assert page.locator(".task[data-task-id='102'] .chip.claim").count() == 0  # in progress, not claimed


@pytest.mark.parametrize("width", [1280, 390])
def test_screenshots_of_every_view(browser: Any, seeded: Process, width: int) -> None:
    """Written for people to look at (tests/artifacts/dashboard/); each view must render."""
    served = seeded
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = 800 if width == 1280 else 844
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        page.goto(f"{served.origin}/?token={served.token}")
        expect()(page.locator("#live")).to_have_attribute("data-state", "live", timeout=10_000)
        expect()(page.locator(".task").first).to_be_visible()
        assert "token=" not in page.url  # taken out of the address bar at once
        page.screenshot(path=str(ARTIFACTS / f"board-{width}.png"))
        for tab, ready in [
            ("graph", "#graph-svg .node"),
            ("calls", "#calls tbody tr"),
            ("team", "#agents-seen tbody tr"),
            ("files", "#tree .file"),
        ]:
            open_tab(page, tab)
            expect()(page.locator(ready).first).to_be_visible(timeout=5_000)
            if tab == "graph":
                page.locator("#graph-svg .node[data-name='gateway']").dispatch_event("click")
            if tab == "files":
                page.locator("#tree .file > button").first.click()
                expect()(page.locator("#preview h2")).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / f"{tab}-{width}.png"))
    finally:
        context.close()


def test_the_team_tab_shows_what_each_member_cost(page: Any, served: Process) -> None:
    """Calls over MCP are counted in the team's ledger, and the usage panel shows them."""
    for query in ("costs", "more costs"):
        call_tool(served.url, "search_planning", {"query": query}, agent="Dora")
    open_tab(page, "team")
    row = page.locator("#usage-members tbody tr[data-name='@Dora']")
    expect()(row).to_be_visible(timeout=TAB_S * 1000)
    expect()(row.locator("td").nth(1)).to_have_text("2")
    expect()(page.locator("#usage-cards tbody tr[data-name='PlanningTool']")).to_be_visible()
    expect()(page.locator("#usage-summary")).to_contain_text("result tokens")
