"""An MCP server with 39 tools of a company's everyday systems, over stdio, for the tool-search case.

``python -m bench._catalog_mcp_server`` is what :mod:`bench.tokens` attaches with ``MCPTool``
beside the default cards (21 tools), so an agent has 60: code hosting, tickets, calendar,
customers, documents, metrics and chat. The definitions are data, written like real servers'
(a sentence of description, a few typed arguments); every call answers ``ok: <tool>`` and the
arguments, so a scripted run can call any of them.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types
from mcp.server import Server
from mcp.server.stdio import stdio_server

__all__ = ["TOOLS", "build_server", "main"]

S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741 - a schema, read beside S


def _schema(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": {**required, **(optional or {})}, "required": list(required)}


TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "repo_list_issues": ("List open issues of a repository, newest first.", _schema({"repo": S}, {"label": S})),
    "repo_get_issue": ("Get one issue with its comments.", _schema({"repo": S, "number": I})),
    "repo_create_issue": ("Open an issue in a repository.", _schema({"repo": S, "title": S, "body": S})),
    "repo_comment_issue": ("Add a comment to an issue or pull request.", _schema({"repo": S, "number": I, "body": S})),
    "repo_close_issue": ("Close an issue with a reason.", _schema({"repo": S, "number": I}, {"reason": S})),
    "repo_list_pulls": ("List open pull requests of a repository.", _schema({"repo": S}, {"author": S})),
    "repo_get_pull_diff": ("Get the diff of a pull request.", _schema({"repo": S, "number": I})),
    "repo_merge_pull": ("Merge a pull request once its checks pass.", _schema({"repo": S, "number": I})),
    "repo_list_releases": ("List the releases and tags of a repository.", _schema({"repo": S})),
    "repo_ci_status": ("Status of the CI checks of a branch or commit.", _schema({"repo": S, "ref": S})),
    "ticket_search": ("Search support tickets by text, status or customer.", _schema({"query": S}, {"status": S})),
    "ticket_get": ("Get one support ticket and its conversation.", _schema({"ticket_id": S})),
    "ticket_reply": ("Reply to a customer on a support ticket.", _schema({"ticket_id": S, "body": S})),
    "ticket_assign": ("Assign a support ticket to an agent or a queue.", _schema({"ticket_id": S, "assignee": S})),
    "ticket_set_priority": ("Change a support ticket's priority.", _schema({"ticket_id": S, "priority": S})),
    "calendar_list_events": (
        "List calendar events between two dates.",
        _schema({"start": S, "end": S}, {"calendar": S}),
    ),
    "calendar_create_event": (
        "Create a calendar event and invite people.",
        _schema({"title": S, "start": S, "end": S}, {"attendees": {"type": "array", "items": S}}),
    ),
    "calendar_find_free_slot": (
        "Find a time when all the given people are free.",
        _schema({"attendees": {"type": "array", "items": S}, "minutes": I}),
    ),
    "calendar_cancel_event": ("Cancel a calendar event and notify attendees.", _schema({"event_id": S})),
    "crm_find_customer": ("Find customers by name, domain or email.", _schema({"query": S})),
    "crm_get_account": ("Get a customer account: plan, contacts, renewal date.", _schema({"account_id": S})),
    "crm_log_note": ("Log a note on a customer account.", _schema({"account_id": S, "note": S})),
    "crm_list_opportunities": ("List open sales opportunities and their stages.", _schema({}, {"owner": S})),
    "crm_update_opportunity": (
        "Move a sales opportunity to another stage.",
        _schema({"opportunity_id": S, "stage": S}),
    ),
    "docs_search": ("Search the company wiki and documents.", _schema({"query": S})),
    "docs_get_page": ("Get one wiki page as Markdown.", _schema({"page_id": S})),
    "docs_create_page": ("Create a wiki page in a space.", _schema({"space": S, "title": S, "body": S})),
    "docs_update_page": ("Replace the body of a wiki page.", _schema({"page_id": S, "body": S})),
    "metrics_query": ("Run a metrics query over a time range.", _schema({"query": S, "since": S})),
    "metrics_list_dashboards": ("List the monitoring dashboards.", _schema({})),
    "alerts_list_firing": ("List the alerts firing now, most severe first.", _schema({}, {"service": S})),
    "alerts_acknowledge": ("Acknowledge a firing alert.", _schema({"alert_id": S})),
    "logs_search": ("Search service logs by text and time range.", _schema({"query": S, "since": S})),
    "chat_post_message": ("Post a message to a chat channel.", _schema({"channel": S, "text": S})),
    "chat_read_channel": ("Read the latest messages of a chat channel.", _schema({"channel": S}, {"limit": I})),
    "chat_find_person": ("Find a colleague by name and show their team.", _schema({"name": S})),
    "hr_time_off": ("List who is off work between two dates.", _schema({"start": S, "end": S})),
    "finance_get_invoice": ("Get an invoice by number: amounts, status, due date.", _schema({"invoice": S})),
    "finance_list_overdue": ("List overdue invoices by customer.", _schema({})),
}


async def _list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
    return mcp_types.ListToolsResult(
        tools=[
            mcp_types.Tool(name=name, description=description, input_schema=schema)
            for name, (description, schema) in TOOLS.items()
        ]
    )


async def _call_tool(ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
    text = f"ok: {params.name} {json.dumps(params.arguments or {}, sort_keys=True)}"
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)])


def build_server() -> Server[Any]:
    """The low-level server with :data:`TOOLS`."""
    return Server("company", on_list_tools=_list_tools, on_call_tool=_call_tool)


def main() -> None:
    """Serve over stdio until stdin closes."""

    async def serve() -> None:
        server = build_server()
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
