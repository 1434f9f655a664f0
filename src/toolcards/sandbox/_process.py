"""Spawn one command, capture its output, stop it and everything it started.

Shared by every backend that runs a host process (``local``, ``bwrap``, ``seatbelt``, the
``docker`` client), in the calling worker thread:

1. ``Popen`` in a new session, so the command leads its own process group, with its cgroup
   and rlimits inherited by all it starts. On Linux a small gate (:data:`GATE`) waits on stdin
   until this process has placed it in the cgroup and lowered its limits (``prlimit``), then
   execs the command, so Python can spawn with ``vfork`` (a ``preexec_fn`` would force
   ``fork``, whose cost grows with this process's memory); elsewhere a ``preexec_fn`` does it.
2. One ``select`` loop reads both streams and waits for the exit (a ``pidfd`` on Linux), so a
   command returns as soon as it ends and never blocks on a full pipe; capture decodes each
   stream and keeps its first and last characters, bounding memory (the middle of a long
   stream is counted, not kept).
3. At exit or deadline the whole process group gets SIGKILL and the cgroup is emptied, so
   background processes never outlive the command; only then are the pipes drained (a
   grandchild holding stdout would keep them open forever).

With ``lifeline``, the write end of the process's stdin stays open in this process until the
command has ended, so the process reads the end of its stdin when the command is over or when
this process dies, even by SIGKILL (see :mod:`toolcards.sandbox._local`, whose launcher kills
its group then). A cancelled call kills the process group from its own thread
(:meth:`RunningProcess.interrupt`). The loop reports progress to the call's
:class:`~toolcards.core._progress.ProgressReporter`, when it has one.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import functools
import os
import resource
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolcards.core._progress import ProgressReporter
from toolcards.sandbox._cgroup import CommandCgroup
from toolcards.sandbox._models import CAPTURE_MARKER, ExecLimits

__all__ = [
    "GATE",
    "LIFELINE_GATE",
    "TIMEOUT_EXIT_CODE",
    "OutputCapture",
    "ProcessOutcome",
    "RunningProcess",
    "SpawnFailed",
    "rlimits_for",
    "run_process",
    "signal_note",
    "user_process_count",
]

TIMEOUT_EXIT_CODE = 124
"""Exit code of a command stopped at its deadline (as coreutils ``timeout`` reports it)."""

_DRAIN_GRACE_S = 0.5
"""How long pipes may stay open after the command is killed (a detached holder, no cgroup)."""

_READ_CHUNK = 65536

PROGRESS_INTERVAL_S = 1.0
"""How often a running command reports its progress (when the call has a reporter)."""

GATE = 'read -r go && [ "$go" = go ] || exit 125; exec </dev/null; exec "$@"'
"""The script ``/bin/sh`` runs before the command: wait for ``go`` on stdin (sent once the
process is in its cgroup and under its rlimits), then exec the command (``$@``) with stdin on
``/dev/null``. It runs nothing unless told to: if this process dies first, it exits 125."""

LIFELINE_GATE = 'read -r go && [ "$go" = go ] || exit 125; exec "$@"'
""":data:`GATE` for a command given a lifeline: stdin, the lifeline, is left to the command."""

_GO = b"go\n"
_GATED = hasattr(resource, "prlimit") and os.path.exists("/bin/sh")


class SpawnFailed(Exception):
    """The process could not be started; ``str(exc)`` says why."""


def rlimits_for(
    limits: ExecLimits, *, nproc: int | None = None, file_size_bytes: int | None = None
) -> list[tuple[int, int]]:
    """``(resource, value)`` pairs to set in the child, soft = hard, never above the current hard.

    ``RLIMIT_CPU`` gets a hard limit one second above the soft one: SIGXCPU first (a
    catchable warning the note can name), SIGKILL after. ``nproc`` is set only when given:
    the caller passes it when no cgroup caps processes and the user is not root.
    ``file_size_bytes`` lowers ``RLIMIT_FSIZE`` below ``limits.file_size_mb`` (what remains of
    the workspace's disk quota); it never raises it.
    """
    mib = 1024 * 1024
    file_size = limits.file_size_mb * mib
    if file_size_bytes is not None:
        file_size = min(file_size, max(file_size_bytes, 0))
    pairs = [
        (resource.RLIMIT_CPU, limits.cpu_s),
        (resource.RLIMIT_DATA, limits.memory_mb * mib),
        (resource.RLIMIT_FSIZE, file_size),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_CORE, 0),
    ]
    if nproc is not None:
        pairs.append((resource.RLIMIT_NPROC, nproc))
    return pairs


def user_process_count() -> int:
    """Processes (threads on Linux) the current user has now: what ``RLIMIT_NPROC`` counts.

    ``RLIMIT_NPROC`` caps the user's total, not one command's, so a limit for a command is
    this count plus the command's allowance. Blocks briefly (reads ``/proc`` or runs ``ps``).
    """
    uid = os.getuid()
    proc = Path("/proc")
    if (proc / "self" / "task").is_dir():
        count = 0
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(entry / "task"))
        return count
    try:
        listed = subprocess.run(
            ["ps", "-U", str(uid), "-o", "pid="], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return 0
    return len(listed.stdout.split())


def _rlimit_plan(rlimits: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """``(resource, soft, hard)`` for each limit, never above this process's hard limit."""
    plan: list[tuple[int, int, int]] = []
    for res, value in rlimits:
        _, hard = resource.getrlimit(res)
        capped = value if hard == resource.RLIM_INFINITY else min(value, hard)
        soft_hard = capped + 1 if res == resource.RLIMIT_CPU else capped
        if hard != resource.RLIM_INFINITY:
            soft_hard = min(soft_hard, hard)
        plan.append((res, capped, soft_hard))
    return plan


def _open_gate(proc: subprocess.Popen[bytes], plan: Sequence[tuple[int, int, int]], procs_files: Sequence[str]) -> None:
    """Put the gated process in its cgroup, lower its limits, then let it exec the command.

    Leaves stdin open: the caller closes it, or keeps it as the command's lifeline.

    Raises:
        OSError: joining the cgroup or setting a limit failed (the command has not run).
    """
    pid = str(proc.pid).encode()
    for path in procs_files:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, pid)
        finally:
            os.close(fd)
    for res, soft, hard in plan:
        resource.prlimit(proc.pid, res, (soft, hard))
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):  # the gate is gone already (killed): the pump sees it exit
        os.write(proc.stdin.fileno(), _GO)


def _child_setup(rlimits: Sequence[tuple[int, int]], procs_files: Sequence[str]) -> Callable[[], None]:
    # Runs in the forked child before exec: os-level calls only, nothing that takes a lock
    # another thread of the parent might have held at fork time.
    plan = _rlimit_plan(rlimits)
    files = tuple(procs_files)

    def setup() -> None:
        pid = str(os.getpid()).encode()
        for path in files:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        for res, soft, hard in plan:
            resource.setrlimit(res, (soft, hard))

    return setup


class OutputCapture:
    """One stream's output as text: its first and last characters, and how many were dropped.

    ``limit`` is in characters (``ExecLimits.output_chars``): the head keeps the first two
    fifths, the tail the last three. Chunks are decoded as they are read (UTF-8, invalid bytes
    replaced, a character split across reads kept whole), so a cut always falls between
    characters, the count of what was dropped is in characters, and the text of a stream
    nothing was dropped from is exactly its decoded output. Memory stays within ``limit``
    characters and one read, however much the command prints.
    """

    def __init__(self, limit: int, on_chunk: Callable[[bytes], None] | None = None) -> None:
        self._on_chunk = on_chunk
        self._pending = b""
        """The start of a character the last read cut off, decoded with the next read."""
        self._head_cap = limit * 2 // 5
        self._tail_cap = limit - self._head_cap
        self._head = ""
        self._tail = ""
        self._finished = False
        self.total = 0
        """Bytes read so far (what progress reports)."""
        self.chars = 0
        """Characters decoded so far."""

    def add(self, chunk: bytes) -> None:
        """Keep what fits; the middle of a long stream is dropped. ``on_chunk`` hears every chunk."""
        if self._on_chunk is not None:
            self._on_chunk(chunk)
        self.total += len(chunk)
        self._decode(chunk, final=False)

    def _decode(self, data: bytes, *, final: bool) -> None:
        # What codecs' incremental decoder does, without its cost per command (a capture
        # is made for every stream of every command, most of them a few bytes long).
        if self._pending:
            data = self._pending + data
        text, used = codecs.utf_8_decode(data, "replace", final)
        self._pending = data[used:]
        self._keep(text)

    def _keep(self, text: str) -> None:
        self.chars += len(text)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += text[:room]
            text = text[room:]
        if not text:
            return
        if len(text) < self._tail_cap:
            text = self._tail + text
        self._tail = text[max(len(text) - self._tail_cap, 0) :]

    def close(self) -> None:
        """The stream has ended: decode what the decoder still holds (the bytes of a character
        the end cut off become U+FFFD, as in a decode of the whole output). Idempotent."""
        if not self._finished:
            self._finished = True
            if self._pending:
                self._decode(b"", final=True)

    @property
    def cut(self) -> int:
        """Characters dropped from the middle (all of them once :meth:`close` was called)."""
        return self.chars - len(self._head) - len(self._tail)

    def text(self, name: str) -> str:
        """The kept characters, with a line where the middle was dropped; closes the capture."""
        self.close()
        cut = self.cut
        if cut:
            return f"{self._head}\n{CAPTURE_MARKER.format(cut=cut, name=name)}\n{self._tail}"
        return self._head + self._tail


@dataclass(kw_only=True)
class ProcessOutcome:
    """How a process ended."""

    exit_code: int
    """The exit status; 128 + N after a signal N; :data:`TIMEOUT_EXIT_CODE` on a timeout."""
    stdout: str
    stderr: str
    stdout_cut: int = 0
    """Characters dropped from the middle of stdout while capturing (marked inside ``stdout``)."""
    stderr_cut: int = 0
    """Characters dropped from the middle of stderr while capturing."""
    timed_out: bool = False
    stopped_by: str | None = None
    """Why it was stopped from outside rather than by its deadline (``"shutdown"``,
    ``"disk quota"``), as given to :meth:`RunningProcess.stop`; ``None`` otherwise."""
    signal: int | None = None
    """The signal that ended the process itself, if any."""
    duration_ms: float = 0.0
    notes: list[str] = field(default_factory=list)


class RunningProcess:
    """A handle on a started command that another thread may kill (thread-safe)."""

    def __init__(self, proc: subprocess.Popen[bytes], cgroup: CommandCgroup | None) -> None:
        self.proc = proc
        self.cgroup = cgroup
        self.stop_reason: str | None = None

    def stop(self, reason: str) -> None:
        """Stop the command from outside: SIGKILL its group and cgroup. Never raises.

        ``reason`` becomes :attr:`ProcessOutcome.stopped_by`; the first reason given wins.
        """
        if self.stop_reason is None:
            self.stop_reason = reason
        self.terminate()

    def kill(self) -> None:
        """Stop the command because the sandbox shuts down (``stop("shutdown")``)."""
        self.stop("shutdown")

    def interrupt(self, reason: str) -> None:
        """SIGKILL the process group now, without waiting: safe on an event loop's thread.

        The thread running the command sees it end and empties its cgroup (a process that
        left the group is killed there). ``reason`` is recorded as :meth:`stop` records it.
        """
        if self.stop_reason is None:
            self.stop_reason = reason
        _kill_group(self.proc.pid)

    def terminate(self) -> None:
        """SIGKILL the process group and empty the cgroup (blocks up to a second)."""
        _kill_group(self.proc.pid)
        if self.cgroup is not None:
            self.cgroup.kill_all(deadline_s=1.0)


def _kill_group(pgid: int) -> None:
    # Safe after the leader was reaped: a process group id is not reused while any member lives.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _exit_notifier(proc: subprocess.Popen[bytes]) -> int:
    """A file descriptor that becomes readable when ``proc`` exits (the caller closes it)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        with contextlib.suppress(OSError):
            fd: int = pidfd_open(proc.pid)
            return fd
    read_end, write_end = os.pipe()

    def wait_then_signal() -> None:
        proc.wait()
        # The reader may be gone already (its command finished through an error path).
        with contextlib.suppress(OSError):
            os.write(write_end, b"x")
        os.close(write_end)

    threading.Thread(target=wait_then_signal, name=f"sandbox-wait-{proc.pid}", daemon=True).start()
    return read_end


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    output_chars: int,
    rlimits: Sequence[tuple[int, int]] = (),
    cgroup: CommandCgroup | None = None,
    on_start: Callable[[RunningProcess], None] | None = None,
    progress: ProgressReporter | None = None,
    on_output: Callable[[str, bytes], None] | None = None,
    lifeline: bool = False,
) -> ProcessOutcome:
    """Run ``argv`` to completion or to its deadline. Blocks the calling thread.

    ``on_start`` receives the handle as soon as the process exists (so a supervisor can
    kill it), before a limited command's gate opens: stopped there, the command never runs.
    The caller removes the handle again after this returns. ``progress`` hears, every
    :data:`PROGRESS_INTERVAL_S`, how long the command has run and how much it printed.
    ``on_output(stream, chunk)`` hears each chunk of ``"stdout"`` and ``"stderr"`` as it is read
    (a background run's log). With ``lifeline`` the process's stdin is a pipe whose write end
    is closed only after the command was killed and reaped, or by the kernel when this
    process dies; the process must not wait for input on it (the local launcher watches it).

    Raises:
        SpawnFailed: the process could not be started (missing executable, no permission,
            the child setup failed). Nothing is left running.
    """
    needs_setup = bool(rlimits) or cgroup is not None
    procs_files = cgroup.procs_files if cgroup else ()
    gated = needs_setup and _GATED
    command = list(argv)
    started = time.monotonic()
    try:
        if gated:
            _check_executable(command[0], cwd, env)
            command = ["/bin/sh", "-c", LIFELINE_GATE if lifeline else GATE, "sh", *command]
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE if gated or lifeline else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
            # The setup does only os-level calls (see _child_setup): safe after fork in a
            # threaded parent, and the only way to join the cgroup before the first exec.
            preexec_fn=_child_setup(rlimits, procs_files)  # noqa: PLW1509
            if needs_setup and not gated
            else None,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise SpawnFailed(f"could not start {argv[0]!r}: {exc}") from exc
    handle = RunningProcess(proc, cgroup)
    if on_start is not None:
        # Before the gate opens: joining the cgroup can take the kernel a second under load,
        # and a stop meanwhile (a cancelled call) must kill the gate then, not after.
        on_start(handle)
    if gated:
        went = False
        try:
            if handle.stop_reason is None:
                _open_gate(proc, _rlimit_plan(rlimits), procs_files)
                went = True
        except OSError as exc:
            if handle.stop_reason is None:  # not a gate killed under it: the start failed
                _kill_group(proc.pid)
                proc.wait()
                for stream in (proc.stdin, proc.stdout, proc.stderr):
                    if stream is not None:
                        stream.close()
                raise SpawnFailed(f"could not start {argv[0]!r}: {exc}") from exc
        finally:
            if proc.stdin is not None and not (lifeline and went):
                proc.stdin.close()  # a gate never told to go sees the end of its input and exits
    assert proc.stdout is not None and proc.stderr is not None
    out = OutputCapture(output_chars, None if on_output is None else functools.partial(on_output, "stdout"))
    err = OutputCapture(output_chars, None if on_output is None else functools.partial(on_output, "stderr"))
    exit_fd = _exit_notifier(proc)
    selector = selectors.DefaultSelector()
    try:
        selector.register(proc.stdout.fileno(), selectors.EVENT_READ, out)
        selector.register(proc.stderr.fileno(), selectors.EVENT_READ, err)
        selector.register(exit_fd, selectors.EVENT_READ, None)
        tick = _progress_tick(progress, started, out, err) if progress is not None else None
        timed_out = not _pump(selector, started + timeout_s, stop_on_exit=True, tick=tick)
        handle.terminate()
        returncode = proc.wait()
        detached = not _pump(selector, time.monotonic() + _DRAIN_GRACE_S, stop_on_exit=False)
        out.close()
        err.close()
    finally:
        selector.close()
        os.close(exit_fd)
        proc.stdout.close()
        proc.stderr.close()
        if proc.returncode is None:
            _kill_group(proc.pid)
            proc.wait()
        if proc.stdin is not None:
            proc.stdin.close()  # the lifeline's end: the group was killed already
    outcome = ProcessOutcome(
        exit_code=128 - returncode if returncode < 0 else returncode,
        signal=-returncode if returncode < 0 else None,
        stdout=out.text("stdout"),
        stderr=err.text("stderr"),
        stdout_cut=out.cut,
        stderr_cut=err.cut,
        timed_out=timed_out,
        stopped_by=None if timed_out else handle.stop_reason,
        duration_ms=(time.monotonic() - started) * 1000,
    )
    if timed_out:
        outcome.exit_code = TIMEOUT_EXIT_CODE
        outcome.signal = None
    if detached:
        outcome.notes.append("a process that left the command's group still held its output; not waited for")
    return outcome


def _check_executable(program: str, cwd: Path, env: Mapping[str, str]) -> None:
    """Raise ``FileNotFoundError`` as ``Popen`` would when ``program`` cannot be found or run.

    A gated command is exec'd by the gate, so without this a missing program would be an
    exit code of 127 instead of a :class:`SpawnFailed`. A path with a ``/`` is relative to
    ``cwd``, where the command starts; a name is looked up on the command's ``PATH``.
    """
    if "/" in program:
        path = os.path.join(cwd, program)
        found = os.path.isfile(path) and os.access(path, os.X_OK)
    else:
        found = shutil.which(program, path=env.get("PATH", os.defpath)) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory (or not executable)", program)


def _progress_tick(
    progress: ProgressReporter, started: float, out: OutputCapture, err: OutputCapture
) -> Callable[[float], None]:
    def tick(now: float) -> None:
        elapsed = now - started
        printed = out.total + err.total
        progress.report(round(elapsed, 1), None, f"running for {elapsed:.0f} s; {printed:,} bytes of output so far")

    return tick


def _pump(
    selector: selectors.BaseSelector,
    deadline: float,
    *,
    stop_on_exit: bool,
    tick: Callable[[float], None] | None = None,
) -> bool:
    """Read ready streams until the process exits (``stop_on_exit``) or both reach EOF;
    ``tick(now)`` every :data:`PROGRESS_INTERVAL_S` meanwhile.

    Returns False when ``deadline`` passed first.
    """
    next_tick = time.monotonic() + PROGRESS_INTERVAL_S
    while True:
        streams = [key for key in selector.get_map().values() if key.data is not None]
        waiting_for_exit = stop_on_exit and any(key.data is None for key in selector.get_map().values())
        if not streams and not waiting_for_exit:
            return True
        now = time.monotonic()
        remaining = deadline - now
        if remaining <= 0:
            return False
        if tick is not None:
            if now >= next_tick:
                tick(now)
                next_tick = now + PROGRESS_INTERVAL_S
            remaining = min(remaining, max(next_tick - now, 0.0))
        for key, _ in selector.select(remaining):
            if key.data is None:
                selector.unregister(key.fd)
                if stop_on_exit:
                    return True
                continue
            chunk = os.read(key.fd, _READ_CHUNK)
            if chunk:
                key.data.add(chunk)
            else:
                selector.unregister(key.fd)


_SIGNAL_NOTES: dict[int, str] = {
    signal.SIGXCPU: "killed by SIGXCPU: the CPU time limit of {cpu_s} s per process was reached",
    signal.SIGXFSZ: "killed by SIGXFSZ: the file size limit of {file_size_mb} MB was reached",
}


def signal_note(exit_code: int, limits: ExecLimits) -> str | None:
    """A sentence for an exit code that says a limit's signal ended the command, else ``None``.

    Reads 128 + N, as both the shell and bwrap report a child's death by signal N.
    """
    if exit_code <= 128:
        return None
    number = exit_code - 128
    template = _SIGNAL_NOTES.get(number)
    if template is not None:
        return template.format(cpu_s=limits.cpu_s, file_size_mb=limits.file_size_mb)
    if number == signal.SIGKILL:
        return "killed by SIGKILL (the memory limit or the hard CPU limit is the usual cause)"
    with contextlib.suppress(ValueError):
        return f"killed by {signal.Signals(number).name}"
    return None
