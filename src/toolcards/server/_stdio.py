"""Serving a :class:`~toolcards.server._app.TeamServer` over stdio, without the MCP SDK.

One client, newline-delimited JSON-RPC frames on stdin and stdout, spoken by
:class:`~toolcards.server._connection.McpConnection` (the handshake protocol and the
stateless 2026-07-28 one, whichever the client opens with). Nothing here imports ``mcp``,
its types, anyio or an HTTP stack: the SDK's import alone took about a second before a
first answer, about twice what the rest of start-up costs.

stdout carries the protocol and nothing else: while serving, file descriptor 1 points at
stderr and frames go out on a private duplicate, so a stray ``print`` in a card or a child
process lands on stderr instead of corrupting a frame; descriptor 0 points at the null
device, so a child that reads stdin cannot eat the client's frames. Both are restored when
serving ends. Log to stderr only.

A frame longer than :data:`MAX_FRAME_BYTES` is dropped (answered with ``-32600``), not
buffered without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from toolcards.server._connection import McpConnection

if TYPE_CHECKING:
    from toolcards.server._app import TeamServer

__all__ = ["MAX_FRAME_BYTES", "serve_stdio"]

logger = logging.getLogger("toolcards.server")

MAX_FRAME_BYTES = 64 * 1024 * 1024
"""The longest frame accepted: room for a large file's contents, but bounded."""
READ_SIZE = 1 << 16
STOPPED_BEFORE_ANSWER = (
    "the server was stopped before this request finished; it was cancelled. A change it was "
    "making may already be committed: check before sending it again (or send it again with "
    "the same idempotency key)"
)


async def serve_stdio(team_server: TeamServer) -> None:
    """Serve ``team_server`` on this process's stdin/stdout until stdin closes.

    Starts the team first (so wiring errors surface before any protocol traffic). Does
    not close the team: the caller does (``await team_server.aclose()``), also after a
    cancellation. When stdin closes, the running requests are answered first; when the
    serving is cancelled (a signal), they are cancelled, and each is answered with an error
    saying the server stopped (``-32603``, ``Server stopping``).

    Raises:
        WiringError: the team's cards cannot be bound.
    """
    await team_server.astart()
    with _claimed_stdio() as (read_fd, write_fd):
        writer = _FrameWriter(write_fd)
        connection = McpConnection(team_server, writer.write)
        stopped: str | None = None
        try:
            oversized = functools.partial(connection.dispatcher.reject_frame, f"frame over {MAX_FRAME_BYTES} bytes")
            await _read_frames(read_fd, connection.feed, oversized)
            # The client sent its last frame; what it asked for still runs to its answer
            # (`serve < requests.jsonl` gets every answer). A signal cancels instead.
            await connection.finish()
        except asyncio.CancelledError:
            stopped = STOPPED_BEFORE_ANSWER
            raise
        finally:
            await connection.aclose(stopped)
            # Nothing may write once the descriptor is closed: its number could be reused by a
            # file a card opens, and a late notification would land in that file.
            writer.closed = True


@contextlib.contextmanager
def _claimed_stdio() -> Iterator[tuple[int, int]]:
    """Private duplicates of fds 0 and 1 for the protocol; 0 → null device, 1 → stderr meanwhile."""
    sys.stdout.flush()
    read_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    write_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield read_fd, write_fd
    finally:
        sys.stdout.flush()  # what a card printed goes to stderr, before fd 1 is the wire again
        os.dup2(write_fd, 1)
        os.dup2(read_fd, 0)
        os.close(write_fd)
        # read_fd stays open: a reader thread (for a regular file on stdin) may still block on it.


class _FrameWriter:
    """Writes frames to the client, whole: a frame never interleaves with another."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.closed = False

    def write(self, frame: bytes) -> None:
        if self.closed:
            return
        data = memoryview(frame + b"\n")
        try:
            while data:
                data = data[os.write(self.fd, data) :]
        except (BrokenPipeError, ConnectionResetError):
            # The client is gone; stdin's end of file ends the serving.
            self.closed = True
            logger.debug("the stdio client closed its end; dropping answers")


async def _read_frames(fd: int, feed: Callable[[bytes], None], oversized: Callable[[], None]) -> None:
    """Feed each line of ``fd`` to ``feed`` until end of file; ``oversized()`` for a line too long."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    splitter = _LineSplitter(feed, oversized)

    def readable() -> None:
        try:
            chunk = os.read(fd, READ_SIZE)
        except BlockingIOError:  # a non-blocking stdin woken without data: wait for more
            return
        except OSError as exc:
            chunk = b""
            logger.warning("reading stdin failed: %s", exc)
        if chunk:
            splitter.push(chunk)
        elif not done.done():
            done.set_result(None)

    try:
        loop.add_reader(fd, readable)
    except (PermissionError, ValueError):
        # A regular file (`serve < requests.jsonl`) cannot be polled: read it in a thread.
        await _read_in_thread(fd, splitter, loop)
        splitter.finish()
        return
    try:
        await done
    finally:
        loop.remove_reader(fd)
    splitter.finish()


async def _read_in_thread(fd: int, splitter: _LineSplitter, loop: asyncio.AbstractEventLoop) -> None:
    done: asyncio.Future[None] = loop.create_future()

    def finish() -> None:
        if not done.done():
            done.set_result(None)

    def pump() -> None:
        while True:
            try:
                chunk = os.read(fd, READ_SIZE)
            except OSError:
                chunk = b""
            if not chunk:
                loop.call_soon_threadsafe(finish)
                return
            loop.call_soon_threadsafe(splitter.push, chunk)

    threading.Thread(target=pump, name="toolcards-stdin", daemon=True).start()
    await done


class _LineSplitter:
    """Cuts a byte stream into lines; a line over :data:`MAX_FRAME_BYTES` is skipped."""

    def __init__(self, feed: Callable[[bytes], None], oversized: Callable[[], None]) -> None:
        self.feed = feed
        self.oversized = oversized
        self.buffer = bytearray()
        self.skipping = False

    def push(self, chunk: bytes) -> None:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            if self.skipping:
                self.skipping = False
            elif self.buffer:
                self.buffer += chunk[start:end]
                line, self.buffer = bytes(self.buffer), bytearray()
                self._line(line)
            else:
                self._line(chunk[start:end])
            start = end + 1
        rest = chunk[start:]
        if self.skipping or not rest:
            return
        if len(self.buffer) + len(rest) > MAX_FRAME_BYTES:
            self.buffer = bytearray()
            self.skipping = True
            self.oversized()
            return
        self.buffer += rest

    def finish(self) -> None:
        """End of input: a last line without a newline is still a frame."""
        if self.buffer and not self.skipping:
            line, self.buffer = bytes(self.buffer), bytearray()
            self._line(line)

    def _line(self, line: bytes) -> None:
        if len(line) > MAX_FRAME_BYTES:
            self.oversized()
        elif line.strip():  # blank lines between frames are harmless
            self.feed(line)
