"""The live dashboard: a team's board, graph, tool calls, roster and files in a browser.

::

    toolcards dashboard [--config team.yaml] [--store ...]     # on its own
    toolcards serve --transport http                           # at /, beside /mcp

* :mod:`~toolcards.dashboard._source` — :class:`TeamSource`: what is shown, as JSON data with
  versions: the cards' views (:mod:`toolcards.core._views`), the call log, the roster;
* :mod:`~toolcards.dashboard._calls` — :class:`CallLog`: every process's tool calls, from the
  team's event log;
* :mod:`~toolcards.dashboard._layout` — where the graph's entities are drawn;
* :mod:`~toolcards.dashboard._hub` — :class:`DashboardHub`: one watcher per server, server-sent
  events to every browser, renders cached by version;
* :mod:`~toolcards.dashboard._app` — the ASGI app and its security headers;
* :mod:`~toolcards.dashboard._serve` — serving it, behind the MCP server's token rules.

This package is an adapter: it imports the core and the actor runtime, never a domain
package; the cards come from the team's config and offer their views through the core.
Starlette, uvicorn and numpy (the ``dashboard`` extra) load when a dashboard is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcards._lazy_names import lazy_names

if TYPE_CHECKING:
    from toolcards.dashboard._app import dashboard_app
    from toolcards.dashboard._calls import CallLog
    from toolcards.dashboard._serve import DEFAULT_DASHBOARD_PORT, dashboard_asgi, dashboard_for, serve_dashboard
    from toolcards.dashboard._source import TeamSource, UnknownView
    from toolcards.dashboard._viewer import TeamViewer

__all__ = [
    "DEFAULT_DASHBOARD_PORT",
    "CallLog",
    "TeamSource",
    "TeamViewer",
    "UnknownView",
    "dashboard_app",
    "dashboard_asgi",
    "dashboard_for",
    "serve_dashboard",
]


# The command line reads DEFAULT_DASHBOARD_PORT on every start; the rest loads when first used.
__getattr__, __dir__ = lazy_names(
    globals(),
    {
        "DEFAULT_DASHBOARD_PORT": "toolcards.dashboard._serve",
        "CallLog": "toolcards.dashboard._calls",
        "TeamSource": "toolcards.dashboard._source",
        "TeamViewer": "toolcards.dashboard._viewer",
        "UnknownView": "toolcards.dashboard._source",
        "dashboard_app": "toolcards.dashboard._app",
        "dashboard_asgi": "toolcards.dashboard._serve",
        "dashboard_for": "toolcards.dashboard._serve",
        "serve_dashboard": "toolcards.dashboard._serve",
    },
)
