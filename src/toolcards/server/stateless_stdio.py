"""The stateless 2026-07-28 protocol on stdio, handed to the SDK's server.

The stdio server speaks the handshake protocol itself. A client that asks for the
stateless protocol with ``server/discover`` (the SDK client's default ``mode="auto"``) is
told the method is not served and falls back to the handshake, one round trip later. A
client pinned to the stateless protocol (``mcp.Client(..., mode="2026-07-28")``) sends no
probe: its first request already carries the protocol's ``_meta`` envelope. That
connection is handed to the SDK's ``Server`` (:attr:`TeamServer.server`), so such a client
is served as before, at the price of importing the SDK (about a second) when it connects.

:func:`opens_stateless` recognises the first frame; :class:`StatelessHandoff` feeds that
frame and every later one to the SDK server through its public ``stdio_server`` with
explicit streams, and writes its frames through the stdio server's writer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from toolcards.server.connection import DISCOVER, has_modern_envelope

if TYPE_CHECKING:
    from toolcards.server.app import TeamServer

__all__ = ["StatelessHandoff", "opens_stateless"]

NOT_OPENING = frozenset({"initialize", DISCOVER})
"""Requests that never open a stateless connection here (the handshake; the probe, refused)."""


def opens_stateless(frame: bytes) -> bool:
    """Whether ``frame`` is a request in the stateless protocol's envelope (other than the probe)."""
    try:
        message = json.loads(frame)
    except (ValueError, RecursionError):
        return False
    if not isinstance(message, dict) or "id" not in message or message.get("method") in NOT_OPENING:
        return False
    params = message.get("params")
    return isinstance(params, dict) and has_modern_envelope(params)


class StatelessHandoff:
    """One stdio connection served by the SDK's server from its first frame on.

    Args:
        team_server: The team (its :attr:`~TeamServer.server` is built, importing ``mcp``).
        write: Sends one frame (without its newline) to the client.
    """

    def __init__(self, team_server: TeamServer, write: Callable[[bytes], None]) -> None:
        self._lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._task = asyncio.ensure_future(self._serve(team_server, write))

    def feed(self, frame: bytes) -> None:
        """Pass one frame from the client to the SDK server."""
        self._lines.put_nowait(frame)

    async def finish(self) -> None:
        """The client closed stdin: let the SDK server end as it does at end of input."""
        self._lines.put_nowait(None)
        await asyncio.shield(self._task)

    def cancel(self) -> None:
        """Stop serving now (a signal)."""
        self._task.cancel()

    async def _serve(self, team_server: TeamServer, write: Callable[[bytes], None]) -> None:
        server = await asyncio.to_thread(lambda: team_server.server)  # imports mcp off the loop
        from mcp.server.stdio import stdio_server

        # Explicit streams: the stdio server already holds fds 0 and 1.
        async with stdio_server(_Lines(self._lines), _Frames(write)) as (read, written):  # type: ignore[arg-type]
            await server.run(read, written, server.create_initialization_options())


class _Lines:
    """The client's frames as the text lines ``stdio_server`` reads."""

    def __init__(self, queue: asyncio.Queue[bytes | None]) -> None:
        self._queue = queue

    def __aiter__(self) -> AsyncIterator[str]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[str]:
        while (frame := await self._queue.get()) is not None:
            yield frame.decode("utf-8", errors="replace")


class _Frames:
    """What ``stdio_server`` writes (one JSON text and a newline per call), as frames."""

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self._write = write

    async def write(self, text: str) -> Any:
        self._write(text.rstrip("\n").encode())

    async def flush(self) -> None:
        return None
