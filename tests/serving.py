"""Serving an ASGI server of the project in a background thread, for tests that talk HTTP to it."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio

Serve = Callable[[anyio.Event, Callable[[str], None]], Awaitable[None]]
"""``serve(stop, on_ready)``: serves until ``stop`` is set, calling ``on_ready(url)`` once it listens."""


@contextlib.contextmanager
def serving_in_thread(serve: Serve, *, what: str, must_stop: bool = False) -> Iterator[str]:
    """Run ``serve`` on its own event loop in a thread; yields the URL it announces.

    An error while starting is raised here. On exit the server is stopped; with
    ``must_stop`` the thread must also have ended within 30 s (nothing kept it serving).
    """
    ready = threading.Event()
    state: dict[str, Any] = {}

    def on_ready(url: str) -> None:
        state["url"] = url
        ready.set()

    async def main() -> None:
        state["stop"], state["loop"] = anyio.Event(), asyncio.get_running_loop()
        try:
            await serve(state["stop"], on_ready)
        except Exception as exc:
            state["error"] = exc
            ready.set()

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    assert ready.wait(60), f"{what} did not start"
    if "error" in state:
        raise state["error"]
    try:
        yield state["url"]
    finally:
        state["loop"].call_soon_threadsafe(state["stop"].set)
        thread.join(30 if must_stop else 60)
        if must_stop:
            assert not thread.is_alive(), "open event streams kept the server from stopping"
