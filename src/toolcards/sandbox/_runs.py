"""Background runs: commands a member starts now and checks on later, by run id.

A run (``exec_command(cmd, background=True)``) runs under its card's policy but takes no slot
of ``max_concurrent``, so a dev server left running keeps no one waiting; its output is kept as
it arrives (:class:`RunLog`: stdout and stderr interleaved, by absolute character offset, the
last ``keep_chars`` kept). :class:`BackgroundRun` is one run; :class:`RunRegistry` holds a
sandbox's runs while they run and the newest finished ones after; :class:`RunStatus` and
:class:`RunOutputPage` are snapshots for any channel. A run belongs to its starter (another
member's id reads as unknown) and lives in the team's sandbox, outliving the call that started
it until its command ends, hits a limit, is stopped or the sandbox stops. Thread-safe and
non-blocking except :meth:`BackgroundRun.wait`, so other front ends can build on it.
"""

from __future__ import annotations

import codecs
import collections
import contextlib
import datetime
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

from toolcards.errors import RetriableError
from toolcards.sandbox._models import ExecResult

__all__ = [
    "RUN_STOP",
    "BackgroundRun",
    "RunLog",
    "RunOutputPage",
    "RunRegistry",
    "RunState",
    "RunStatus",
    "current_run",
    "running_in_background",
]

RUN_STOP = "stop requested"
"""``ExecResult.stopped`` of a run its owner stopped (``exec_stop``)."""

RunState = Literal["starting", "running", "exited", "stopped", "failed"]
"""``starting``: not spawned yet; ``running``; ``exited``: the command ended by itself (any
exit code); ``stopped``: the sandbox ended it (deadline, disk quota, stop request,
shutdown); ``failed``: it never ran (refused or the sandbox could not start it)."""


class RunLog:
    """The output of a run as one text, read by absolute character offsets.

    Chunks of stdout and stderr are decoded (UTF-8, invalid bytes replaced, a character
    split across chunks kept whole) and appended in the order they were read. When more
    than ``keep_chars`` characters have been written the oldest are dropped; offsets never
    shift, so a reader that saved an offset reads on from where it was.
    """

    def __init__(self, keep_chars: int) -> None:
        self.keep_chars = keep_chars
        self._lock = threading.Lock()
        self._chunks: collections.deque[str] = collections.deque()
        self._kept = 0
        self._start = 0
        """Offset of the first character kept."""
        self._decoders = {
            "stdout": codecs.getincrementaldecoder("utf-8")("replace"),
            "stderr": codecs.getincrementaldecoder("utf-8")("replace"),
        }

    def add(self, stream: str, chunk: bytes) -> None:
        """Append a chunk read from ``stream`` (``"stdout"`` or ``"stderr"``)."""
        with self._lock:
            self._append(self._decoders[stream].decode(chunk))

    def add_text(self, text: str) -> None:
        """Append already decoded text (a backend that hands over its output only at the end)."""
        with self._lock:
            self._append(text)

    def close(self) -> None:
        """Flush what the decoders still hold (an incomplete character at the very end)."""
        with self._lock:
            for decoder in self._decoders.values():
                self._append(decoder.decode(b"", final=True))

    def _append(self, text: str) -> None:
        if not text:
            return
        self._chunks.append(text)
        self._kept += len(text)
        excess = self._kept - self.keep_chars
        while excess > 0:
            first = self._chunks[0]
            if len(first) <= excess:
                self._chunks.popleft()
                cut = len(first)
            else:
                self._chunks[0] = first[excess:]
                cut = excess
            self._kept -= cut
            self._start += cut
            excess -= cut

    @property
    def end(self) -> int:
        """Characters written so far (the offset after the last one)."""
        with self._lock:
            return self._start + self._kept

    def read(self, offset: int, limit: int) -> tuple[int, str, int]:
        """``(start, text, end)``: up to ``limit`` characters from ``offset``.

        ``start`` is where ``text`` begins: ``offset``, or the first character still kept when
        older ones were dropped; ``end`` is the total written. An offset past the end reads
        nothing.
        """
        with self._lock:
            end = self._start + self._kept
            start = min(max(offset, self._start), end)
            skip = start - self._start
            parts: list[str] = []
            wanted = limit
            for chunk in self._chunks:
                if wanted <= 0:
                    break
                if skip >= len(chunk):
                    skip -= len(chunk)
                    continue
                piece = chunk[skip : skip + wanted]
                skip = 0
                parts.append(piece)
                wanted -= len(piece)
            return start, "".join(parts), end


@dataclass(frozen=True, kw_only=True)
class RunStatus:
    """A snapshot of one run."""

    run_id: str
    owner: str
    """The member that started it (its name)."""
    command: str
    cwd: str
    state: RunState
    started_at: datetime.datetime
    """When it was started (UTC)."""
    seconds: float
    """How long it has run, or ran."""
    output_chars: int
    """Characters of output written so far (the offset after the last one)."""
    result: ExecResult | None = None
    """How it ended: exit code, notes on limits hit, why it was stopped; ``None`` while it runs."""

    @property
    def ended(self) -> bool:
        """Whether the command is over (it will write no more output)."""
        return self.result is not None

    @property
    def label(self) -> str:
        """The run id and its command line, shortened: ``r1 `npm run dev```."""
        line = " ".join(self.command.split())
        return f"{self.run_id} `{line if len(line) <= 60 else line[:59] + '…'}`"

    @property
    def ending(self) -> str:
        """How it ended, in a few words (``exit code 0``, ``stopped: timeout``); empty while it runs."""
        result = self.result
        if result is None:
            return ""
        if result.error is not None:
            return "did not run"
        if result.stopped is not None:
            return f"stopped: {result.stopped}"
        return f"exit code {result.exit_code}"

    def describe(self) -> str:
        """One line for a model: the run, its state, how it ended, what was noted."""
        head = self.label + (f" in {self.cwd}" if self.cwd else "")
        result = self.result
        if result is None:
            verb = "starting" if self.state == "starting" else f"running for {self.seconds:.0f} s"
            return f"{head}: {verb}; {self.output_chars:,} characters of output so far."
        if result.error is not None:
            return f"{head}: did not run. {result.error}"
        notes = "".join(f" [{note}]" for note in result.notes)
        return f"{head}: {self.ending} after {self.seconds:.1f} s; {self.output_chars:,} characters of output.{notes}"


@dataclass(frozen=True, kw_only=True)
class RunOutputPage:
    """Part of a run's output, from ``start`` to ``start + len(text)``."""

    status: RunStatus
    start: int
    """Offset of the first character of ``text`` (later than asked when older output was dropped)."""
    text: str
    asked: int
    """The offset that was asked for."""

    @property
    def next_offset(self) -> int:
        """Where the next page begins."""
        return self.start + len(self.text)

    @property
    def more(self) -> bool:
        """Whether output after this page exists already."""
        return self.next_offset < self.status.output_chars


class BackgroundRun:
    """One command running (or run) in the background. Thread-safe.

    The sandbox's worker thread attaches the process once spawned (:meth:`attach`), feeds
    :attr:`log`, and calls :meth:`finish` with the result; anyone may :meth:`stop` it or
    :meth:`wait` for it.
    """

    def __init__(self, *, run_id: str, owner: str, command: str, cwd: str, keep_chars: int) -> None:
        self.run_id = run_id
        self.owner = owner
        self.command = command
        self.cwd = cwd
        self.log = RunLog(keep_chars)
        self.started_at = datetime.datetime.now(datetime.UTC)
        self._started = time.monotonic()
        self._ended: float | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._kill: Callable[[str], None] | None = None
        self._stop_reason: str | None = None
        self._result: ExecResult | None = None
        self._end_seen = False

    # -- the sandbox's side ----------------------------------------------------------------

    def attach(self, kill: Callable[[str], None]) -> None:
        """The command was spawned; ``kill(reason)`` kills its process group without waiting.

        A stop requested before the spawn is carried out now.
        """
        with self._lock:
            self._kill = kill
            reason = self._stop_reason
        if reason is not None:
            kill(reason)

    @property
    def stop_reason(self) -> str | None:
        """Why a stop was requested, if one was (the worker runs nothing after one)."""
        with self._lock:
            return self._stop_reason

    def finish(self, result: ExecResult) -> None:
        """The command is over; ``result`` says how. Output a backend returned only at the end
        (no streaming) is added to the log. Wakes every :meth:`wait`."""
        self.log.close()
        if self.log.end == 0 and (result.stdout or result.stderr):
            self.log.add_text(result.stdout + result.stderr)
        with self._lock:
            self._result = result
            self._ended = time.monotonic()
            self._kill = None
        self._done.set()

    # -- the owner's side ------------------------------------------------------------------

    def stop(self, reason: str = RUN_STOP) -> bool:
        """Kill the command and every process it started, without waiting for it to end.

        Returns ``False`` when it had ended already. The result's ``stopped`` is ``reason``.
        """
        with self._lock:
            if self._result is not None:
                return False
            if self._stop_reason is None:
                self._stop_reason = reason
            kill = self._kill
        if kill is not None:
            kill(reason)
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run ends (or ``timeout`` seconds pass); whether it ended."""
        return self._done.wait(timeout)

    @property
    def ended(self) -> bool:
        """Whether the command is over."""
        return self._done.is_set()

    def status(self, *, seen: bool = False) -> RunStatus:
        """A snapshot; with ``seen``, the owner has now read how it ended (see :attr:`unseen_end`)."""
        with self._lock:
            result = self._result
            ended = self._ended
            if seen and result is not None:
                self._end_seen = True
            attached = self._kill is not None
        if result is None:
            state: RunState = "running" if attached else "starting"
        elif result.error is not None:
            state = "failed"
        elif result.stopped is not None:
            state = "stopped"
        else:
            state = "exited"
        return RunStatus(
            run_id=self.run_id,
            owner=self.owner,
            command=self.command,
            cwd=self.cwd,
            state=state,
            started_at=self.started_at,
            seconds=(ended if ended is not None else time.monotonic()) - self._started,
            output_chars=self.log.end,
            result=result,
        )

    @property
    def unseen_end(self) -> bool:
        """Ended, and its owner has not read its status or output since."""
        with self._lock:
            return self._result is not None and not self._end_seen

    def output(self, offset: int, limit: int) -> RunOutputPage:
        """Up to ``limit`` characters of output from ``offset`` (see :meth:`RunLog.read`)."""
        status = self.status(seen=True)
        start, text, _ = self.log.read(offset, limit)
        return RunOutputPage(status=status, start=start, text=text, asked=offset)


class RunRegistry:
    """The background runs of one sandbox, by id, each visible to its owner only.

    Ids are short (``r1``, ``r2``, ...): ``r`` and a number from ``numbers``, never reused by
    a registry. By default the numbers are the registry's own, from 1; a team's sandbox draws
    them from the team's store (:class:`~toolcards.sandbox._run_numbers.StoredRunNumbers`), so
    an id a model remembers from before a restart, or from another process of the team, never
    names a newer run. Each owner may have ``max_running`` runs not yet ended (the caller
    passes its card's figure); finished runs are kept, the newest ``keep_finished`` of each
    owner, so their output can still be read.
    """

    def __init__(self, *, keep_finished: int = 16, numbers: Callable[[], int] | None = None) -> None:
        """``numbers()`` returns a new run number each call (it may block, on a store write)."""
        self.keep_finished = keep_finished
        self._lock = threading.Lock()
        self._runs: dict[str, BackgroundRun] = {}
        self._numbers = numbers if numbers is not None else itertools.count(1).__next__

    def add(self, owner: str, command: str, cwd: str, *, keep_chars: int, max_running: int) -> BackgroundRun:
        """Register a new run of ``owner`` (not started yet).

        Draws its number outside the registry's lock (a store write may wait), so readers
        are never held up by it; a number drawn for a run refused meanwhile is skipped.

        Raises:
            RetriableError: ``owner`` already has ``max_running`` runs that have not ended;
                the message lists them.
            toolcards.errors.StoreError: the number could not be drawn from the store.
        """
        with self._lock:
            self._check_room(owner, max_running)
        run_id = f"r{self._numbers()}"
        with self._lock:
            self._check_room(owner, max_running)
            while run_id in self._runs:  # numbering started again (another store): skip kept ids
                run_id = f"r{self._numbers()}"
            self._prune(owner)
            run = BackgroundRun(run_id=run_id, owner=owner, command=command, cwd=cwd, keep_chars=keep_chars)
            self._runs[run.run_id] = run
            return run

    def _check_room(self, owner: str, max_running: int) -> None:
        """Raise the ``RetriableError`` of :meth:`add` when ``owner`` has no room (lock held)."""
        live = [run for run in self._runs.values() if run.owner == owner and not run.ended]
        if len(live) >= max_running:
            listed = ", ".join(run.status().label for run in live)
            limit = "are off for this card" if max_running == 0 else f"are limited to {max_running} at once"
            raise RetriableError(
                f"Background runs {limit}; yours still running: {listed or 'none'}. "
                "Stop one with exec_stop, or run the command without background."
            )

    def get(self, owner: str, run_id: str) -> BackgroundRun:
        """``owner``'s run ``run_id``.

        Raises:
            RetriableError: no such run of ``owner`` (another member's reads as unknown);
                the message lists the owner's runs.
        """
        with self._lock:
            run = self._runs.get(run_id.strip())
        if run is None or run.owner != owner:
            known = ", ".join(run.run_id for run in self.owned_by(owner))
            listed = f"Your runs: {known}." if known else "You have no background runs."
            raise RetriableError(
                f"No background run {run_id!r} of yours. {listed} Start one with exec_command(cmd, background=True)."
            )
        return run

    def owned_by(self, owner: str) -> list[BackgroundRun]:
        """``owner``'s runs, oldest first."""
        with self._lock:
            self._prune(owner)
            return [run for run in self._runs.values() if run.owner == owner]

    def _prune(self, owner: str) -> None:
        """Forget ``owner``'s finished runs but the newest :attr:`keep_finished` (lock held)."""
        finished = [run for run in self._runs.values() if run.owner == owner and run.ended]
        for old in finished[: max(len(finished) - self.keep_finished, 0)]:
            del self._runs[old.run_id]

    def all(self) -> list[BackgroundRun]:
        """Every run kept, oldest first."""
        with self._lock:
            return list(self._runs.values())

    def remove(self, run_id: str) -> None:
        """Forget a run (one refused before it started, say). Does not stop it."""
        with self._lock:
            self._runs.pop(run_id, None)


_current_run: ContextVar[BackgroundRun | None] = ContextVar("toolcards_background_run", default=None)


def current_run() -> BackgroundRun | None:
    """The background run the calling thread is executing, if any (the sandbox's worker)."""
    return _current_run.get()


@contextlib.contextmanager
def running_in_background(run: BackgroundRun) -> Iterator[None]:
    """Within the block, commands executed are ``run``'s: their process is attached to it, their
    output goes to its log, and they take no concurrency slot."""
    token = _current_run.set(run)
    try:
        yield
    finally:
        _current_run.reset(token)
