"""The dashboard cookie in a real browser (Debian's chromium through Playwright) against a real
``toolcards serve --transport http``: it opens the dashboard, and never the MCP endpoint.

A browser sends a host's cookies to every port of it, so the cookie the printed ``/?token=``
link sets reaches any local listener the user visits; it must not be a key to the team's tools.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.dashboard.servers import Process

pytestmark = pytest.mark.slow

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "page", "version": "1"}},
}

FETCH = """async ([path, method, body]) => {
    const response = await fetch(path, {
        method,
        credentials: "include",
        headers: {"content-type": "application/json", "accept": "application/json, text/event-stream"},
        body,
    });
    return response.status;
}"""
"""Run in the page: a same-origin request carrying the page's cookies; returns its status."""


def expect() -> Any:
    from playwright.sync_api import expect

    return expect


def test_the_cookie_loads_the_dashboard_but_the_page_cannot_reach_mcp(browser: Any, served: Process) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(f"{served.origin}/?token={served.token}")
        expect()(page.locator("#team")).to_have_text("lookout", timeout=10_000)
        (cookie,) = [c for c in context.cookies() if c["name"].startswith("toolcards-")]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and served.token not in cookie["value"]

        # From the page, with its cookie: the MCP endpoint answers 401 to every method.
        body = json.dumps(INITIALIZE)
        assert page.evaluate(FETCH, ["/mcp", "POST", body]) == 401
        assert page.evaluate(FETCH, ["/mcp", "GET", None]) == 401
        assert page.evaluate(FETCH, ["/mcp", "DELETE", None]) == 401
        assert page.evaluate(FETCH, ["/api/team", "POST", body]) == 401  # nothing but reads
        assert page.evaluate(FETCH, ["/api/team", "GET", None]) == 200

        # The dashboard still loads from the cookie alone, live data included.
        page.goto(f"{served.origin}/")
        assert "token=" not in page.url
        expect()(page.locator("#team")).to_have_text("lookout", timeout=10_000)
        expect()(page.locator("#live")).to_have_attribute("data-state", "live", timeout=10_000)
    finally:
        context.close()
