"""Serving a :class:`~toolcards.server.app.TeamServer` over stdio.

stdout carries the protocol and nothing else: while serving, the SDK points file
descriptor 1 at stderr and answers on a private duplicate, so a stray ``print`` in a card
or a child process lands on stderr instead of corrupting a frame. Log to stderr only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolcards.server.app import TeamServer

__all__ = ["serve_stdio"]


async def serve_stdio(team_server: TeamServer) -> None:
    """Serve ``team_server`` on this process's stdin/stdout until stdin closes.

    Starts the team first (so wiring errors surface before any protocol traffic). Does
    not close the team: the caller does (``await team_server.aclose()``), also after a
    cancellation.

    Raises:
        WiringError: the team's cards cannot be bound.
    """
    from mcp.server.stdio import stdio_server

    await team_server.astart()
    server = team_server.server
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
