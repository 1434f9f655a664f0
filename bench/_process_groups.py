"""A cancelled command's processes, found in ``/proc``, until its process group is gone.

The cancellation benchmark and the cancellation tests take the same steps: start a call whose
command runs ``sleep N`` (a unique N, so its processes can be found), wait until it runs,
cancel the call, and wait until no live process of the command's process groups is left.
:func:`cancel_until_gone` takes them and returns how long the last one took; the benchmark
reports it, the tests only need it to end.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

__all__ = ["cancel_until_gone", "group_alive", "live_processes_with"]


def live_processes_with(text: str) -> list[int]:
    """Pids of live (not zombie) processes, other than this one, whose command line contains ``text``."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (a zombie waiting to be reaped does not)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


async def cancel_until_gone(call: Awaitable[Any], running: str, *, timeout_s: float) -> float:
    """Run ``call``; once a process whose command line contains ``running`` is live, cancel it
    and wait until its process groups are gone. Returns the seconds from the cancel to then.

    Polls from the event loop (which must run: it sends the cancel). Raises
    :class:`RuntimeError` if the command does not start or its groups outlive ``timeout_s``,
    or if the call was answered instead of cancelled.
    """
    task = asyncio.ensure_future(call)
    deadline = time.monotonic() + timeout_s
    while not (pids := live_processes_with(running)):
        if task.done():  # its error, if it failed
            raise RuntimeError(f"the call ended before {running!r} ran: {task.result()!r}")
        if time.monotonic() > deadline:
            task.cancel()
            raise RuntimeError(f"no process running {running!r} appeared in {timeout_s} s")
        await asyncio.sleep(0.005)
    pgids = {os.getpgid(pid) for pid in pids}
    started = time.perf_counter()
    task.cancel()
    while any(map(group_alive, pgids)):
        if time.perf_counter() - started > timeout_s:
            raise RuntimeError(f"process groups {pgids} still alive {timeout_s} s after the cancel")
        await asyncio.sleep(0.001)
    elapsed = time.perf_counter() - started
    try:
        await task
    except asyncio.CancelledError:
        return elapsed
    raise RuntimeError("a cancelled call was answered")
