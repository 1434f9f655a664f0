"""Long tool calls as MCP tasks (protocol 2025-11-25): started, polled, cancelled, fetched.

A client that declares task support may send a ``tools/call`` with ``task: {ttl}`` for a
tool whose card marks it ``long_running`` (``exec_command``; listed with
``execution.taskSupport: "optional"``). The server answers at once with the task
(``CreateTaskResult``) and runs the call on, through the same pipeline; then:

* ``tasks/get`` — its status: ``working``, then ``completed`` (``failed`` when the result is
  an error), or ``cancelled``;
* ``tasks/result`` — waits for the call and returns its ``CallToolResult``, marked with the
  task's id (``_meta["io.modelcontextprotocol/related-task"]``);
* ``tasks/cancel`` — cancels the call like ``notifications/cancelled`` does (the command's
  process group is killed); the task is ``cancelled``;
* ``tasks/list`` — the caller's tasks.

While the call waits for its user (a tool that needs approval, asked by elicitation), the task
is ``input_required``, and the question carries the task's id
(``_meta["io.modelcontextprotocol/related-task"]``): see :func:`awaiting_input`.

A task belongs to the connection that started it; others see no such task. It is kept
``ttl`` milliseconds after it was created (default an hour, at most a day), then forgotten;
the server holds at most :data:`MAX_TASKS` at once. The stateless 2026-07-28 protocol moved
tasks to an extension this server does not offer.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from toolcards.server._jsonrpc import INVALID_PARAMS, RequestError

__all__ = ["MAX_TASKS", "RELATED_TASK_KEY", "TASKS_CAPABILITY", "TASKS_VERSION", "TaskRegistry", "awaiting_input"]

TASKS_VERSION = "2025-11-25"
"""The one protocol version with tasks in its core."""
RELATED_TASK_KEY = "io.modelcontextprotocol/related-task"
TASKS_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
"""The server's ``tasks`` capability: task-augmented ``tools/call``, listing, cancelling."""
DEFAULT_TTL_MS = 3_600_000
MAX_TTL_MS = 86_400_000
POLL_INTERVAL_MS = 1000
MAX_TASKS = 1000


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(kw_only=True, eq=False)
class _Task:
    task_id: str
    owner: Any
    ttl_ms: int
    expires: float
    created: str
    updated: str
    status: str = "working"
    message: str | None = None
    result: dict[str, Any] | None = None
    runner: asyncio.Task[None] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def wire(self) -> dict[str, Any]:
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttl": self.ttl_ms,
            "pollInterval": POLL_INTERVAL_MS,
        }
        if self.message:
            task["statusMessage"] = self.message
        return task


class TaskRegistry:
    """The server's running and finished tasks. Use it from one event loop.

    Args:
        clock: Seconds, monotonic (tests pass a fake).
        on_status: Called with ``(owner, task wire)`` when a task's status changes (the
            stdio server sends ``notifications/tasks/status``).
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_status: Callable[[Any, dict[str, Any]], None] | None = None,
    ) -> None:
        self._clock = clock
        self._tasks: dict[str, _Task] = {}
        self.on_status = on_status

    def start(self, owner: Any, run: Callable[[], Awaitable[dict[str, Any]]], ttl_ms: Any = None) -> dict[str, Any]:
        """Start ``run()`` (a ``tools/call``'s result) as a task of ``owner``; the
        ``CreateTaskResult``, in wire form.

        Raises:
            RequestError: ``ttl_ms`` is not a positive whole number, or too many tasks are held.
        """
        self._expire()
        if ttl_ms is None:
            ttl_ms = DEFAULT_TTL_MS
        if not isinstance(ttl_ms, int) or isinstance(ttl_ms, bool) or ttl_ms <= 0:
            raise RequestError(INVALID_PARAMS, "Invalid request parameters", "task.ttl must be a positive integer")
        if len(self._tasks) >= MAX_TASKS:
            raise RequestError(INVALID_PARAMS, "Invalid request parameters", "too many tasks; fetch or cancel some")
        ttl_ms = min(ttl_ms, MAX_TTL_MS)
        now = _now()
        task = _Task(
            task_id=secrets.token_urlsafe(16),
            owner=owner,
            ttl_ms=ttl_ms,
            expires=self._clock() + ttl_ms / 1000,
            created=now,
            updated=now,
        )
        self._tasks[task.task_id] = task
        task.runner = asyncio.ensure_future(self._run(task, run))
        return {"task": task.wire()}

    async def _run(self, task: _Task, run: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        # The runner has a context of its own: the call's worker thread, which copies it, finds
        # its task there when it must wait for the user.
        _running.set((self, task, asyncio.get_running_loop()))
        try:
            result = await run()
        except asyncio.CancelledError:
            self._finish(task, "cancelled", None, "The task was cancelled.")
            raise
        except Exception as exc:  # the server's call never raises; this is a bug, said as a failed task
            self._finish(task, "failed", None, f"{type(exc).__name__}: {exc}")
            return
        self._finish(task, "failed" if result.get("isError") else "completed", result, None)

    def _finish(self, task: _Task, status: str, result: dict[str, Any] | None, message: str | None) -> None:
        if task.status in ("completed", "failed", "cancelled"):
            return
        task.status, task.result, task.message, task.updated = status, result, message, _now()
        task.done.set()
        if self.on_status is not None:
            self.on_status(task.owner, task.wire())

    def _set_waiting(self, task: _Task, waiting: bool) -> None:
        """Mark ``task`` as waiting for its user's input, or working again; an ended one stays."""
        if task.status in ("completed", "failed", "cancelled"):
            return
        task.status = "input_required" if waiting else "working"
        task.message = "Waiting for the user's answer." if waiting else None
        task.updated = _now()
        if self.on_status is not None:
            self.on_status(task.owner, task.wire())

    def get(self, owner: Any, task_id: Any) -> dict[str, Any]:
        """``tasks/get``: the task, in wire form.

        Raises:
            RequestError: ``owner`` has no task ``task_id`` (``-32602``).
        """
        return self._find(owner, task_id).wire()

    async def result(self, owner: Any, task_id: Any) -> dict[str, Any]:
        """``tasks/result``: waits for the task, then its ``CallToolResult`` (a cancelled task's
        says so), marked with the task's id.

        Raises:
            RequestError: ``owner`` has no task ``task_id``.
        """
        task = self._find(owner, task_id)
        await task.done.wait()
        result = task.result or {
            "content": [{"type": "text", "text": task.message or "The task ended without a result."}],
            "isError": True,
        }
        meta = {**result.get("_meta", {}), RELATED_TASK_KEY: {"taskId": task.task_id}}
        return {**result, "_meta": meta}

    def cancel(self, owner: Any, task_id: Any) -> dict[str, Any]:
        """``tasks/cancel``: cancel the task's call (its work stops, as for
        ``notifications/cancelled``); the task, now ``cancelled``.

        Raises:
            RequestError: ``owner`` has no task ``task_id``, or it already ended.
        """
        task = self._find(owner, task_id)
        if task.status != "working":
            raise RequestError(
                INVALID_PARAMS, "Invalid request parameters", f"task {task.task_id} already ended ({task.status})"
            )
        if task.runner is not None:
            task.runner.cancel()
        self._finish(task, "cancelled", None, "The task was cancelled.")
        return task.wire()

    def list(self, owner: Any) -> dict[str, Any]:
        """``tasks/list``: ``owner``'s tasks, oldest first."""
        self._expire()
        return {"tasks": [task.wire() for task in self._tasks.values() if task.owner is owner]}

    def forget(self, owner: Any) -> None:
        """``owner``'s connection closed: cancel its running tasks and drop them all."""
        for task_id, task in list(self._tasks.items()):
            if task.owner is owner:
                if task.runner is not None and not task.runner.done():
                    task.runner.cancel()
                del self._tasks[task_id]

    def _find(self, owner: Any, task_id: Any) -> _Task:
        if not isinstance(task_id, str):
            raise RequestError(INVALID_PARAMS, "Invalid request parameters", "taskId must be a string")
        self._expire()
        task = self._tasks.get(task_id)
        if task is None or task.owner is not owner:
            shown = task_id if len(task_id) <= 100 else task_id[:100] + "…"  # an id is echoed, not a payload
            raise RequestError(INVALID_PARAMS, "Invalid request parameters", f"no task {shown!r}")
        return task

    def _expire(self) -> None:
        now = self._clock()
        for task_id, task in list(self._tasks.items()):
            if task.expires <= now:
                if task.runner is not None and not task.runner.done():
                    task.runner.cancel()
                del self._tasks[task_id]


_running: ContextVar[tuple[TaskRegistry, _Task, asyncio.AbstractEventLoop] | None] = ContextVar(
    "toolcards_running_task", default=None
)


@contextlib.contextmanager
def awaiting_input() -> Iterator[dict[str, Any]]:
    """Around a question to the client's user, from any thread of a call: when the call runs
    as a task, the task is ``input_required`` until the block ends. Yields the ``_meta`` the
    question carries (the related task; empty outside a task)."""
    running = _running.get()
    if running is None:
        yield {}
        return
    registry, task, loop = running
    loop.call_soon_threadsafe(registry._set_waiting, task, True)
    try:
        yield {RELATED_TASK_KEY: {"taskId": task.task_id}}
    finally:
        loop.call_soon_threadsafe(registry._set_waiting, task, False)
