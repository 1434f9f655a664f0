"""Keyed ``exec_command`` calls: a command sent again with its idempotency key is not run again.

A command changes things outside the team's store, so its record cannot commit together with
its effect, as a store-backed actor's does (:mod:`toolcards.store._calls`). A keyed command is
written down twice instead, in the team's store, namespace ``"<team_id>/#SandboxActor"`` (the
one :mod:`toolcards.sandbox._run_numbers` writes), collection :data:`~toolcards.store._calls.CALLS`:

1. before it starts, in one write holding the namespace's lock, its key is looked up; when it
   is not there a *started* row is staged (the arguments' digest, the time, the pid and
   :func:`~toolcards.actors._process_liveness.machine_mark` of this process, the command's
   deadline), and the command runs only once that row has committed;
2. once it has ended, one more write replaces that row by its answer, in the record shape of
   :class:`~toolcards.store._calls.CallLog` (``d``, ``a``, ``v``, ``t``) plus how the command
   was stopped (``s``), so a replay is the same kind of answer as the first.

A retry, whichever process of the team it reaches, finds the answer (replayed; the command is
not run again), a started row (the command still runs, or its process ended before recording
an answer: either way it is not run again, and the answer says which), or nothing (it runs).
The same key with other arguments is refused, as :meth:`CallLog.replay` refuses it. A command
refused before it started deletes its row, so its retry runs it. Records are purged by the
limits of :mod:`toolcards.store._calls`. A call without a key never reaches this module.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from toolcards.actors._process_liveness import machine_mark, process_gone
from toolcards.core._idempotency import CallKey
from toolcards.errors import OutcomeUnknown, StoreError
from toolcards.sandbox._run_numbers import RUN_NUMBERS_NAMESPACE, first_rows
from toolcards.store._base import CatchUp, Change, JSONValue, Snapshot, Store
from toolcards.store._calls import CALLS, CallLog

__all__ = ["UNKEYED", "Claim", "CommandCalls", "EarlierCall"]

logger = logging.getLogger(__name__)

TOOL: Final = "exec_command"

RUNNING_MARGIN_S: Final = 60.0
"""Seconds past its deadline that a command started by a process this one cannot check (on
another host or boot) still counts as running: time for it to be killed and its answer written."""

PURGE_EVERY: Final = 192
"""A keyed start loads the namespace to purge expired records at about one version in this
many (every 64 keyed commands or so, counted in the store, so short-lived processes purge too)."""

_PROCESS: Final = uuid.uuid4().hex[:12]
"""This process among those that had its pid: a restarted server may get its predecessor's."""

_running_lock = threading.Lock()
_running: dict[tuple[str, str], tuple[str, bool, float]] = {}
"""``(namespace, call key)`` → ``(digest, background, time started)`` of the keyed calls this
process is running."""


@dataclass(frozen=True, kw_only=True, slots=True)
class EarlierCall:
    """What an earlier call with the same key left: its answer, or why it has none."""

    answer: str | None
    """The text the first call's command gave (as :meth:`ExecResult.render` bounds it), or
    ``None`` when no answer was recorded."""
    stopped: str | None = None
    """How the first call's command was stopped (:attr:`ExecResult.stopped`), if it was."""
    message: str = ""
    """Without an answer: what became of the first call, in words for the model."""


class Claim:
    """A call this process is to run. Once its command has ended, or failed to start, call
    exactly one of :meth:`record` (it ran), :meth:`forget` (it was refused before it started:
    nothing ran) or :meth:`leave` (whether it ran is not known). :data:`UNKEYED` does nothing."""

    __slots__ = ("_call", "_calls")

    def __init__(self, calls: CommandCalls | None, call: CallKey | None) -> None:
        self._calls = calls
        self._call = call

    def record(self, answer: str, stopped: str | None) -> None:
        """Replace the call's started row by its answer (:meth:`CommandCalls.record`)."""
        if self._calls is not None and self._call is not None:
            self._calls.record(self._call, answer, stopped)

    def forget(self) -> None:
        """Delete the call's started row (:meth:`CommandCalls.forget`)."""
        if self._calls is not None and self._call is not None:
            self._calls.forget(self._call)

    def leave(self) -> None:
        """Leave the call's started row (:meth:`CommandCalls.leave`)."""
        if self._calls is not None and self._call is not None:
            self._calls.leave(self._call)


UNKEYED: Final = Claim(None, None)
"""The claim of a call without a key: it records nothing, and costs nothing."""


class CommandCalls:
    """The keyed ``exec_command`` calls of one team, in its store. Thread-safe (the store is).

    For each call :meth:`start` returns a :class:`Claim` (run the command, then say how it
    ended) or what an earlier call with the same key left (run nothing).
    """

    def __init__(self, store: Store, team_id: str) -> None:
        """``store`` must outlive the sandbox (the process's default store does)."""
        self.store = store
        self.namespace = RUN_NUMBERS_NAMESPACE.format(team_id=team_id)

    def start(self, call: CallKey, *, deadline_s: float, background: bool, check: str) -> Claim | EarlierCall:
        """Claim ``call`` before its command starts: a :class:`Claim` when this call is to run
        it, or what an earlier call with the same key left (then nothing is to run).

        ``deadline_s`` is how long the command may run (its start only, for a background run);
        ``check`` says where the model can see what a command changed. Blocks for three store
        operations, one of them a write that may wait for another process's; a retry that this
        process is running now is answered without the store.

        Raises:
            ToolFailed: the key was used before with other arguments.
            StoreError: the store could not be read or written; nothing was claimed (a commit
                whose outcome is unknown is taken back, and reported as transient).
        """
        slot = (self.namespace, call.key)
        with _running_lock:
            running = _running.get(slot)
            if running is None:
                _running[slot] = (call.digest, background, time.time())
        if running is not None:
            digest, first_in_background, started = running
            _replay(call, {"d": digest, "a": None})  # refuses other arguments
            return EarlierCall(answer=None, message=_still_running(started, first_in_background))
        try:
            row = self._claim(call, deadline_s, background)
        except OutcomeUnknown as exc:
            # The started row may be in the store, yet nothing will run: take it back, so the
            # retry runs the command instead of hearing that its end was not recorded.
            self.forget(call)
            raise StoreError(f"{exc} The command was not run.", transient=True) from exc
        except BaseException:
            _release(slot)
            raise
        if row is None:
            return Claim(self, call)
        _release(slot)
        answer = _replay(call, row)
        if answer is not None:
            stopped = row.get("s")
            return EarlierCall(answer=str(answer), stopped=stopped if isinstance(stopped, str) else None)
        return EarlierCall(answer=None, message=_unfinished(row, check))

    def record(self, call: CallKey, answer: str, stopped: str | None) -> None:
        """Replace ``call``'s started row by its answer, in one store write.

        A store failure is logged, not raised: the command has run and its caller still gets
        its answer; a retry then hears that the answer was not recorded, and nothing runs again.
        """
        try:
            with self.store.write(self.namespace, since=None) as txn:
                value: dict[str, JSONValue] = {"d": call.digest, "a": answer, "v": txn.version + 1, "t": time.time()}
                if stopped is not None:
                    value["s"] = stopped
                txn.stage([Change(collection=CALLS, key=call.key, value=value)])
        except StoreError as exc:
            logger.warning("exec_command ran, but its answer could not be recorded for a retry: %s", exc)
        finally:
            _release((self.namespace, call.key))

    def forget(self, call: CallKey) -> None:
        """Delete ``call``'s started row: its command was refused before it started, so a
        retry may run it. A store failure is logged (the retry then runs nothing and says so)."""
        try:
            self.store.put(self.namespace, CALLS, {call.key: None})
        except StoreError as exc:
            logger.warning("exec_command was not run, but its claim could not be deleted: %s", exc)
        finally:
            _release((self.namespace, call.key))

    def leave(self, call: CallKey) -> None:
        """Leave ``call``'s started row as it is (whether its command ran is not known): a retry
        hears that its answer was not recorded, and nothing runs again."""
        _release((self.namespace, call.key))

    def _claim(self, call: CallKey, deadline_s: float, background: bool) -> JSONValue | None:
        """Stage ``call``'s started row unless its key has a row; returns that row, or ``None``."""
        store, namespace = self.store, self.namespace
        # A read inside the write would wait for the lock the write holds: read first, then
        # catch up, inside the write, with what was committed after the version read.
        version = store.version(namespace)
        found = store.get(namespace, CALLS, [call.key]).get(call.key)
        purge = version % PURGE_EVERY < 3
        with store.write(namespace, since=0 if purge else version) as txn:
            row = _latest(txn.catch_up, call.key, found)
            if row is not None:
                return row
            value = {
                "d": call.digest,
                "a": None,
                "v": txn.version + 1,
                "t": time.time(),
                "p": os.getpid(),
                "m": machine_mark(),
                "o": _PROCESS,
                "l": deadline_s,
                "b": background,
            }
            rows = [Change(collection=CALLS, key=call.key, value=value), *first_rows(txn.version)]
            if purge and txn.catch_up is not None:
                rows += _expired(txn.catch_up)
            txn.stage(rows)
        return None


def _release(slot: tuple[str, str]) -> None:
    with _running_lock:
        _running.pop(slot, None)


def _replay(call: CallKey, row: JSONValue) -> JSONValue | None:
    """The answer recorded in ``row`` (``None``: none yet), as :meth:`CallLog.replay` reads it.

    Raises:
        ToolFailed: ``row`` was recorded with other arguments.
    """
    log = CallLog()
    log.absorb(Change(collection=CALLS, key=call.key, value=row))
    return log.replay(call, TOOL)


def _latest(catch_up: CatchUp | None, key: str, found: JSONValue | None) -> JSONValue | None:
    """The row of ``key`` now: ``found`` (read before the write) brought up to date."""
    if catch_up is None:
        return found
    if isinstance(catch_up, Snapshot):
        return catch_up.rows.get(CALLS, {}).get(key)
    for change in catch_up.changes:
        if change.collection == CALLS and change.key == key:
            return change.value
    return found


def _expired(catch_up: CatchUp) -> list[Change]:
    """Deletes of the records past :mod:`toolcards.store._calls`'s limits (``catch_up`` holds
    the whole namespace)."""
    log = CallLog()
    for change in catch_up.changes:
        if change.collection == CALLS:
            log.absorb(change)
    return log.purge()


def _unfinished(row: JSONValue, check: str) -> str:
    """What became of a call whose started row has no answer: still running, or ended unrecorded."""
    pid, mark = row.get("p"), row.get("m")
    started = float(row.get("t", 0.0))
    here = machine_mark()
    if pid == os.getpid() and row.get("o") == _PROCESS:
        # This process does not run it (start() found no such call running), so it ended and
        # its answer could not be written.
        return _not_recorded(check)
    if process_gone(mark, pid) or (here is not None and mark == here and pid == os.getpid()):
        # The second case: a process that had this pid before this one.
        return _server_stopped(check)
    if time.time() - started <= float(row.get("l", 0.0)) + RUNNING_MARGIN_S:
        return _still_running(started, bool(row.get("b")))
    return _not_recorded(check)  # past its deadline: killed, if its process still ran it


def _still_running(started: float, background: bool) -> str:
    if background:
        return (
            "This exec_command call is still starting its background run, from its first call; it was not "
            "started again. Send it again in a moment with the same key to get the run id."
        )
    since = datetime.fromtimestamp(started, UTC).strftime("%H:%M:%S UTC")
    return (
        f"This exec_command call is still running from its first call (started at {since}); the command was "
        "not started again. Send it again later with the same key to get its answer."
    )


def _server_stopped(check: str) -> str:
    return (
        "This exec_command call was started before its server stopped, and its end was not recorded: the "
        f"command was not run again. It may have run in part or to its end: {check}. To run it again, "
        "send it as a new call (with a new idempotency key)."
    )


def _not_recorded(check: str) -> str:
    return (
        "This exec_command call was started before, and its end could not be recorded: the command was not "
        f"run again. It may have run in part or to its end: {check}. To run it again, send it as a new call "
        "(with a new idempotency key)."
    )
