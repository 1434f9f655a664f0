"""``DashboardHub``: one watcher of the team per dashboard server, fanned out to every browser.

While at least one browser listens (server-sent events), the hub asks the
:class:`~toolcards.dashboard._source.TeamSource` for every view's version every
:data:`POLL_INTERVAL_S` — the store's cheap version checks (SQLite's ``PRAGMA
data_version``), not a read of the data — and sends each listener the names of the views
that changed; the page then fetches those. Renders are cached by view, parameters and
version, so ten open tabs cost one render per change, and a poll costs the same with one
tab or a hundred. Nothing is polled while nobody listens.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Hashable, Mapping
from typing import Any

from toolcards.dashboard._source import TeamSource

__all__ = ["KEEPALIVE_S", "POLL_INTERVAL_S", "DashboardHub"]

logger = logging.getLogger("toolcards.dashboard")

POLL_INTERVAL_S = 0.25
"""How often the versions are checked while someone listens."""
KEEPALIVE_S = 15.0
"""A comment line is sent this often on an idle stream, so proxies keep it open."""
_QUEUE_SIZE = 32


def _event(kind: str, data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


class DashboardHub:
    """Watches ``source`` for the listeners of one dashboard server. Use it on one event loop."""

    def __init__(self, source: TeamSource, *, interval: float = POLL_INTERVAL_S) -> None:
        self.source = source
        self.interval = interval
        self._listeners: set[asyncio.Queue[bytes | None]] = set()
        self._versions: dict[str, Hashable] = {}
        self._poller: asyncio.Task[None] | None = None
        self._renders: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[Hashable, Any]] = {}
        self._rendering: dict[tuple[str, tuple[tuple[str, str], ...]], asyncio.Lock] = {}
        self._closed = False

    @property
    def listeners(self) -> int:
        """How many event streams are open."""
        return len(self._listeners)

    # -- data ------------------------------------------------------------------------------

    async def render(self, name: str, params: Mapping[str, str] | None = None) -> Any:
        """View ``name``'s data, rendered at most once per version (in a worker thread).

        Raises what :meth:`TeamSource.render` raises.
        """
        key = (name, tuple(sorted((params or {}).items())))
        lock = self._rendering.setdefault(key, asyncio.Lock())
        async with lock:
            version = await asyncio.to_thread(self.source.version, name)
            cached = self._renders.get(key)
            if cached is not None and cached[0] == version and version is not None:
                return cached[1]
            data = await asyncio.to_thread(self.source.render, name, params)
            if len(self._renders) > 256:  # parameterised views (file previews) come and go
                self._renders.clear()
            self._renders[key] = (version, data)
            return data

    # -- events ----------------------------------------------------------------------------

    async def stream(self) -> AsyncIterator[bytes]:
        """Server-sent events for one listener: ``hello`` (the team and its views), then a
        ``changed`` event (``{"views": [...]}``) whenever views changed; ends on :meth:`close`."""
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=_QUEUE_SIZE)
        self._listeners.add(queue)
        try:
            if not self._versions:
                # The page fetches after "hello": from this baseline on, no change is missed.
                self._versions = await asyncio.to_thread(self.source.versions)
            self._start_polling()
            yield _event("hello", {"team": self.source.team_id, "views": self.source.names()})
            while not self._closed:
                try:
                    message = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                except TimeoutError:
                    yield b": keep-alive\n\n"
                    continue
                if message is None:
                    return
                yield message
        finally:
            self._listeners.discard(queue)

    def close(self) -> None:
        """End every event stream and stop polling (the server is stopping)."""
        self._closed = True
        for queue in list(self._listeners):
            self._offer(queue, None)
        if self._poller is not None:
            self._poller.cancel()

    def _start_polling(self) -> None:
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll(), name="dashboard poll")

    async def _poll(self) -> None:
        while self._listeners and not self._closed:
            try:
                versions = await asyncio.to_thread(self.source.versions)
            except Exception:
                logger.exception("reading the team's versions failed")
                versions = self._versions
            changed = sorted(name for name, version in versions.items() if self._versions.get(name) != version)
            self._versions = versions
            if changed:
                message = _event("changed", {"views": changed})
                for queue in list(self._listeners):
                    self._offer(queue, message)
            await asyncio.sleep(self.interval)

    @staticmethod
    def _offer(queue: asyncio.Queue[bytes | None], message: bytes | None) -> None:
        try:
            queue.put_nowait(message)
        except asyncio.QueueFull:
            # A listener that fell behind: drop what it missed and have it refetch everything.
            while not queue.empty():
                queue.get_nowait()
            queue.put_nowait(message if message is None else _event("changed", {"views": ["*"]}))
