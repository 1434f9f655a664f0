"""The team's sandbox: one Pykka actor per team that runs every agent's shell commands.

The actor owns the backend's state and lifecycle (a docker container, a seatbelt temp
directory, the running commands) but never runs a command on its own thread, which would
serialise every command: :meth:`SandboxActor.run` starts a worker thread and returns a pykka
``Future`` at once, so one agent's long test suite never queues another's ``ls`` and the actor
keeps answering (``stop`` included). At most ``options.max_concurrent`` commands run at once;
more wait in their worker thread. Through a proxy the answer is a future of a future::

    result = proxy.run("pytest -q").get().get()      # or: await ask_async twice

Each call may carry its card's :class:`CommandPolicy`, under which that command alone runs.
What a backend cannot apply per command is listed by :meth:`SandboxActor.conflicts`, which a
card calls when it binds, so disagreeing cards fail loudly. Every refusal or failure is a
result, never an exception: ``error`` holds ``CommandNotAllowedError: ...`` or
``SandboxError: ...`` and ``exit_code`` is ``None``.

Backends register in :data:`SANDBOX_ACTOR_CLASSES` under their mode name; another package adds
one by subclassing :class:`SandboxActor`, implementing ``_execute`` (which must apply the
policy it is given) and registering the class before a team starts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, ClassVar

import pykka
from pydantic import ValidationError
from pykka.typing import ActorMemberMixin, proxy_method

from toolcards.core._cancel import CancelToken, cancelling, current_cancel
from toolcards.core._progress import ProgressReporter, current_progress, reporting
from toolcards.errors import WiringError
from toolcards.fs._tree_usage import workspace_usage
from toolcards.sandbox._bwrap import WORKSPACE_MOUNT, EtcSnapshot, bwrap_argv, bwrap_path_env, snapshot_etc
from toolcards.sandbox._cgroup import CommandCgroup, cgroup_support, remove_stale_groups
from toolcards.sandbox._cwd import cwd_vanished, resolve_cwd
from toolcards.sandbox._docker import CONTAINER_PATH, CONTAINER_WORKSPACE, DockerContainer
from toolcards.sandbox._environment import python_bin_dirs, sandbox_env
from toolcards.sandbox._forwarder import EGRESS_MOUNT, forwarder_argv, proxy_env
from toolcards.sandbox._guards import CommandRefused, check_allowed
from toolcards.sandbox._hosts import HostAllowlist
from toolcards.sandbox._local import hide_host_process, launcher_argv, local_path_env, shell_argv
from toolcards.sandbox._models import (
    BwrapOptions,
    CommandPolicy,
    DockerOptions,
    ExecLimits,
    ExecResult,
    LocalOptions,
    SandboxOptions,
    SeatbeltOptions,
)
from toolcards.sandbox._probe import choose_mode
from toolcards.sandbox._process import (
    TIMEOUT_EXIT_CODE,
    ProcessOutcome,
    RunningProcess,
    SpawnFailed,
    rlimits_for,
    run_process,
    signal_note,
    user_process_count,
)
from toolcards.sandbox._quota import MIB, DiskWatch, QuotaStart
from toolcards.sandbox._runs import RUN_STOP, BackgroundRun, RunRegistry, current_run, running_in_background
from toolcards.sandbox._seatbelt import seatbelt_argv

if TYPE_CHECKING:
    from toolcards.sandbox._egress import EgressGate, EgressProxy

__all__ = [
    "CANCEL_STOP",
    "QUOTA_STOP",
    "SANDBOX_ACTOR_CLASSES",
    "BwrapSandboxActor",
    "DockerSandboxActor",
    "LocalSandboxActor",
    "SandboxActor",
    "SandboxProxy",
    "SeatbeltSandboxActor",
    "sandbox_actor_class",
]

logger = logging.getLogger(__name__)

_warned: set[str] = set()
_warned_lock = threading.Lock()


def _warn_once(key: str, message: str) -> None:
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    logger.warning(message)


class SandboxActor(pykka.ThreadingActor):
    """Runs shell commands in one team's workspace, contained by a backend.

    Subclasses set :attr:`mode` and :attr:`options_class` and implement :meth:`_execute`;
    host-process backends build an argv and call :meth:`_spawn`. Override :meth:`_close`
    to release backend resources at stop, and extend :attr:`shared_options` /
    :attr:`shared_limits` with what the backend cannot apply per command.
    """

    mode: ClassVar[str] = ""
    """The name this class is registered under in :data:`SANDBOX_ACTOR_CLASSES`."""
    isolation: ClassVar[str] = ""
    """What contains a command, in a few words a model or an operator can read."""
    options_class: ClassVar[type[SandboxOptions]] = SandboxOptions
    scratch_prefix: ClassVar[str] = "toolcards-sandbox-"
    """Name prefix of the private host directory :meth:`_scratch_dir` creates."""
    workspace_mount: ClassVar[str | None] = None
    """Where a command sees the workspace when not at its host path (``/workspace``), so a
    symlink the command made to it is followed like the command would (see :mod:`.cwd`)."""
    shared_options: ClassVar[tuple[str, ...]] = ("max_concurrent",)
    """Option fields that hold for the whole actor, not per command: every card of a team
    must agree on them (see :meth:`conflicts`)."""
    shared_limits: ClassVar[tuple[str, ...]] = ()
    """``ExecLimits`` fields the backend cannot apply per command (docker's container)."""

    def __init__(
        self,
        workspace: Path,
        limits: ExecLimits | None = None,
        timeout_s: float = 60.0,
        options: SandboxOptions | Mapping[str, Any] | None = None,
        *,
        owner: str = "",
        run_numbers: Callable[[], int] | None = None,
    ) -> None:
        """Configure the sandbox; nothing is spawned until the first command.

        ``limits``, ``timeout_s`` and ``options`` form the default :class:`CommandPolicy`
        (:attr:`policy`), used by calls that carry none; ``timeout_s`` is the longest
        deadline of such a command. ``options`` may be this backend's options, a mapping
        validated into them, or another backend's options (their common fields carry over,
        which is what mode ``auto`` needs). ``owner`` names who started the actor (the card
        and agent), for the message of a card that cannot share it. ``run_numbers`` numbers
        the background runs (see :class:`~toolcards.sandbox._runs.RunRegistry`; a team's
        sandbox draws them from its store). The workspace directory is created if missing,
        and cgroups left behind by dead processes are removed
        (:func:`~toolcards.sandbox._cgroup.remove_stale_groups`).

        Raises:
            WiringError: ``timeout_s`` is not positive or ``options`` does not validate.
        """
        super().__init__()
        self.policy = self.policy_for(limits or ExecLimits(), timeout_s, options)
        self.workspace = Path(workspace).expanduser().resolve()
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.limits = self.policy.limits
        self.timeout_s = self.policy.timeout_s
        self.options = self.policy.options
        self.owner = owner or f"the {self.mode or type(self).__name__} sandbox"
        self._slots = threading.BoundedSemaphore(self.options.max_concurrent)
        self._lock = threading.Lock()
        self._scratch: Path | None = None
        self._running: set[RunningProcess] = set()
        self._workers: set[threading.Thread] = set()
        self._closed = False
        self._nproc: dict[bool, int | None] = {}
        self._usage = workspace_usage(self.workspace)
        self.runs = RunRegistry(numbers=run_numbers)
        """The team's background runs (:meth:`start_run`); thread-safe, read it from any thread."""
        if self.options.use_cgroup:
            remove_stale_groups()
        self._set_up()

    def _set_up(self) -> None:
        """What a backend prepares once its options are known (nothing is spawned yet).

        Raises:
            WiringError: the options cannot hold on this host.
        """

    @classmethod
    def policy_for(
        cls, limits: ExecLimits, timeout_s: float, options: SandboxOptions | Mapping[str, Any] | None
    ) -> CommandPolicy:
        """A :class:`CommandPolicy` with ``options`` validated into :attr:`options_class`.

        Raises:
            WiringError: ``timeout_s`` is not positive or ``options`` does not validate.
        """
        if timeout_s <= 0:
            raise WiringError(f"{cls.__name__}: timeout_s must be positive, got {timeout_s!r}.")
        return CommandPolicy(limits=limits, timeout_s=float(timeout_s), options=cls._coerce_options(options))

    @classmethod
    def _coerce_options(cls, options: SandboxOptions | Mapping[str, Any] | None) -> SandboxOptions:
        if isinstance(options, cls.options_class):
            return options
        if isinstance(options, SandboxOptions):
            common = set(SandboxOptions.model_fields)
            options = {key: value for key, value in options.model_dump().items() if key in common}
        try:
            return cls.options_class.model_validate(dict(options or {}))
        except ValidationError as exc:
            raise WiringError(f"{cls.__name__}: invalid sandbox options: {exc}") from exc

    # -- public API --------------------------------------------------------------------

    def run(
        self,
        cmd: str,
        cwd: str = "",
        timeout_s: float | None = None,
        policy: CommandPolicy | None = None,
        cancel: CancelToken | None = None,
        progress: ProgressReporter | None = None,
    ) -> pykka.Future[ExecResult]:
        """Start ``cmd`` in a worker thread; return a future of its :class:`ExecResult`.

        Returns at once (the actor thread never waits for a command). ``cwd`` is relative
        to the workspace; ``timeout_s`` may shorten the policy's deadline, never extend it.
        ``policy`` (default: :attr:`policy`) is what this command is allowed; see
        :meth:`execute`. ``cancel`` is the call's token (:mod:`toolcards.core._cancel`): once
        it is cancelled the command does not start, or its process group is killed at once
        (``stopped="cancelled"``); ``progress`` hears how long it has run. The future always
        resolves with a result, refusals and failures included; only a programming error
        inside the sandbox reaches ``get()`` as an exception.

        Changed in 0.3: ``cancel`` and ``progress``.
        """
        future: pykka.Future[ExecResult] = pykka.ThreadingFuture()
        worker = threading.Thread(
            target=self._work,
            args=(future, cmd, cwd, timeout_s, policy, cancel, progress),
            name=f"sandbox-{self.mode}",
            daemon=True,
        )
        with self._lock:
            self._workers.add(worker)
        worker.start()
        return future

    def execute(
        self, cmd: str, cwd: str = "", timeout_s: float | None = None, policy: CommandPolicy | None = None
    ) -> ExecResult:
        """Run ``cmd`` under ``policy`` and wait for it, in the calling thread (blocks until it ends).

        The policy's allowlist, limits, deadline, disk quota and backend options apply to
        this command only; the actor's shared settings (the workspace, the number of
        concurrent commands, :attr:`shared_options`) stay the actor's. ``cwd`` is checked
        here, once, for every backend (:func:`~toolcards.sandbox._cwd.resolve_cwd`): one no
        command can start in is refused in the workspace's terms before anything runs.

        Thread-safe; this is what :meth:`run`'s worker calls. Call it on the actor object
        from your own thread, never through a proxy: there it would run on the actor thread
        and hold up every other command. Never raises for a refused, failed or
        misbehaving command: the result says what happened. The calling context's cancel
        token and progress reporter (:func:`~toolcards.core._cancel.current_cancel`,
        :func:`~toolcards.core._progress.current_progress`) apply to the command.
        """
        policy = policy or self.policy
        refusal = check_allowed(cmd, policy.options.allowed_commands)
        if refusal is not None:
            return self._refused(cmd, refusal)
        try:
            host_cwd, rel_cwd = resolve_cwd(self.workspace, cwd, mount=self.workspace_mount)
        except CommandRefused as exc:
            return self._refused(cmd, str(exc))
        if timeout_s is not None and timeout_s <= 0:
            return self._refused(cmd, f"SandboxError: timeout_s must be positive, got {timeout_s!r}.")
        deadline = policy.timeout_s if timeout_s is None else min(timeout_s, policy.timeout_s)
        cancel = current_cancel()
        background = current_run() is not None  # a background run takes no slot
        if not background and not self._take_slot(cancel):
            return self._cancelled(cmd)
        try:
            if self._closed:
                return self._failed(cmd, "SandboxError: the sandbox is shutting down; nothing was run.")
            try:
                result = self._execute(cmd, host_cwd, rel_cwd, deadline, policy)
            except SpawnFailed as exc:
                if not host_cwd.is_dir():
                    # Removed after it was checked (by another command, say); the spawn's
                    # error would name the host path.
                    return self._refused(cmd, cwd_vanished(rel_cwd))
                return self._failed(cmd, f"SandboxError: {exc}")
            except OSError as exc:
                return self._failed(cmd, f"SandboxError: {type(exc).__name__}: {exc}")
        finally:
            if not background:
                self._slots.release()
        if timeout_s is not None and timeout_s > policy.timeout_s:
            notes = (*result.notes, f"timeout_s={timeout_s:g} capped at {policy.timeout_s:g} s, the configured limit")
            result = result.model_copy(update={"notes": notes})
        return result

    def _take_slot(self, cancel: CancelToken | None) -> bool:
        """Wait for a free command slot; ``False`` (holding none) when the call is cancelled first."""
        if cancel is None:
            self._slots.acquire()
            return True
        while not self._slots.acquire(timeout=_SLOT_POLL_S):
            if cancel.cancelled:
                return False
        if cancel.cancelled:
            self._slots.release()
            return False
        return True

    def start_run(
        self,
        cmd: str,
        cwd: str = "",
        timeout_s: float | None = None,
        policy: CommandPolicy | None = None,
        *,
        owner: str,
        max_running: int = 4,
        keep_chars: int = 1_000_000,
        around: contextlib.AbstractContextManager[Any] | None = None,
    ) -> BackgroundRun | ExecResult:
        """Start ``cmd`` as a background run of ``owner``; returns the run at once, or why it cannot run.

        Checked first, as :meth:`execute` checks them: the allowlist, ``cwd`` and
        ``timeout_s``; a refusal is an :class:`ExecResult` and nothing is started. Then the
        run is registered in :attr:`runs` and a worker thread executes it under ``policy``
        (its limits, disk quota and deadline), outside the ``max_concurrent`` slots, its output
        kept in the run's log (the last ``keep_chars`` characters). The returned
        :class:`~toolcards.sandbox._runs.BackgroundRun` is thread-safe: read, stop and wait
        for it from any thread. Never blocks (the spawn happens in the worker). ``around`` is a
        block the worker runs the command inside, entered before the spawn and left after the
        end (the workspace journal's, which records what the run changed).

        Raises:
            RetriableError: ``owner`` has ``max_running`` runs that have not ended.
        """
        policy = policy or self.policy
        refusal = check_allowed(cmd, policy.options.allowed_commands)
        if refusal is not None:
            return self._refused(cmd, refusal)
        try:
            resolve_cwd(self.workspace, cwd, mount=self.workspace_mount)
        except CommandRefused as exc:
            return self._refused(cmd, str(exc))
        if timeout_s is not None and timeout_s <= 0:
            return self._refused(cmd, f"SandboxError: timeout_s must be positive, got {timeout_s!r}.")
        if self._closed:
            return self._failed(cmd, "SandboxError: the sandbox is shutting down; nothing was run.")
        run = self.runs.add(owner, cmd, cwd, keep_chars=keep_chars, max_running=max_running)
        worker = threading.Thread(
            target=self._work_in_background,
            args=(run, cwd, timeout_s, policy, around),
            name=f"sandbox-{self.mode}-{run.run_id}",
            daemon=True,
        )
        with self._lock:
            self._workers.add(worker)
        worker.start()
        return run

    def run_of(self, owner: str, run_id: str) -> BackgroundRun:
        """``owner``'s background run ``run_id`` (thread-safe; use it from your own thread).

        Raises:
            RetriableError: ``owner`` has no run of that id; the message lists theirs.
        """
        return self.runs.get(owner, run_id)

    def runs_of(self, owner: str) -> list[BackgroundRun]:
        """``owner``'s background runs still kept, oldest first."""
        return self.runs.owned_by(owner)

    def conflicts(self, mode: str, workspace: Path, policy: CommandPolicy) -> list[str]:
        """What a card with ``mode``, ``workspace`` and ``policy`` cannot share with this actor.

        Each entry names a setting and both values (the card's first, then this actor's).
        Empty when the card can use this actor: everything else in ``policy`` is applied
        per command. Runs on the actor thread; cheap.
        """
        differences: list[str] = []
        if mode != self.mode:
            differences.append(f"mode {mode!r} vs {self.mode!r}")
        if Path(workspace).expanduser().resolve() != self.workspace:
            differences.append(f"workspace {str(workspace)!r} vs {str(self.workspace)!r}")
        for name in self.shared_options:
            theirs, ours = getattr(policy.options, name, None), getattr(self.options, name, None)
            if theirs != ours:
                differences.append(f"options.{name} {theirs!r} vs {ours!r}")
        for name in self.shared_limits:
            theirs, ours = getattr(policy.limits, name), getattr(self.limits, name)
            if theirs != ours:
                differences.append(f"limits.{name} {theirs!r} vs {ours!r}")
        return differences

    def describe(self) -> str:
        """One line saying what contains the commands (for a system prompt or a status)."""
        limits = f"{self.limits.cpu_s} s CPU, {self.limits.memory_mb} MB, {self.timeout_s:g} s per command"
        return f"{self.mode} sandbox: {self.isolation}; limits: {limits}"

    # -- lifecycle -----------------------------------------------------------------------

    def on_stop(self) -> None:
        """Kill running commands, wait for their workers (up to 5 s each), release the backend.

        Runs on the actor thread. Commands still waiting for a slot resolve with a
        ``SandboxError`` saying the sandbox is shutting down.
        """
        with self._lock:
            self._closed = True
            running = list(self._running)
            workers = list(self._workers)
        for handle in running:
            handle.kill()
        current = threading.current_thread()
        for worker in workers:
            if worker is not current:
                worker.join(timeout=5)
        self._close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def _close(self) -> None:
        """Release backend resources (containers). Runs once, at stop, before the scratch
        directory is removed."""

    def _scratch_dir(self) -> Path:
        """A private host directory for this sandbox, created on first use, removed at stop.

        Thread-safe (workers call it); takes the actor's lock, so never call it while
        holding that lock.
        """
        with self._lock:
            if self._scratch is None:
                self._scratch = Path(tempfile.mkdtemp(prefix=self.scratch_prefix))
            return self._scratch

    # -- for subclasses --------------------------------------------------------------------

    def _execute(
        self, cmd: str, host_cwd: Path, rel_cwd: PurePosixPath, timeout_s: float, policy: CommandPolicy
    ) -> ExecResult:
        """Run one allowed command in ``rel_cwd`` (``host_cwd`` on the host) and wait for it.

        Both name a directory inside the workspace, checked and free of symlinks, ``.`` and
        ``..``; ``rel_cwd`` is ``"."`` for the root.

        Apply ``policy`` (limits, backend options, disk quota) to this command; ``timeout_s``
        is its deadline, already capped by the policy. Called in a worker thread, possibly
        several at once: must be thread-safe.

        Raises:
            SpawnFailed: the command could not be started (becomes ``SandboxError``).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement _execute")

    def _spawn(
        self,
        cmd: str,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout_s: float,
        policy: CommandPolicy,
        contained: bool = True,
        stop_inside: Callable[[], None] | None = None,
        lifeline: bool = False,
    ) -> ExecResult:
        """Run a host process under ``policy`` and return its result, limits hit noted.

        With ``contained``, the process gets the policy's rlimits (its file size capped by
        what remains of the disk quota) and its own cgroup; the docker client does not need
        them (its container has its own). The workspace's disk quota is watched either
        way; ``stop_inside`` is called besides killing the host process when the quota
        stops the command (docker: the command runs in the container, not under the client).
        ``lifeline`` gives the process a stdin that ends when the command has ended or this
        process died (see :func:`~toolcards.sandbox._process.run_process`).
        """
        limits = policy.limits
        quota = self._usage.at_start(limits.disk_mb, file_size_mb=limits.file_size_mb)
        cgroup = self._new_cgroup(policy) if contained else None
        rlimits = self._child_rlimits(policy, quota) if contained else []
        handles: list[RunningProcess] = []
        watch = DiskWatch(self._usage, quota)

        cancel = current_cancel()
        forget_cancel: list[Callable[[], None]] = []
        run = current_run()

        def track(handle: RunningProcess) -> None:
            handles.append(handle)
            if run is not None:

                def stop_run(reason: str) -> None:
                    handle.interrupt(reason)
                    if stop_inside is not None:  # docker: the command runs in the container
                        threading.Thread(target=stop_inside, name="sandbox-stop-run", daemon=True).start()

                run.attach(stop_run)
            with self._lock:
                self._running.add(handle)
                closed = self._closed
            if closed:
                handle.kill()

            def stop_for_quota() -> None:
                handle.stop(QUOTA_STOP)
                if stop_inside is not None:
                    stop_inside()

            def stop_for_cancel() -> None:
                # Runs in the cancelling thread (an event loop's): kill the group, block on nothing.
                handle.interrupt(CANCEL_STOP)
                if stop_inside is not None:
                    threading.Thread(target=stop_inside, name="sandbox-cancel", daemon=True).start()

            watch.start(stop_for_quota)
            if cancel is not None:
                forget_cancel.append(cancel.on_cancel(stop_for_cancel))

        try:
            outcome = run_process(
                argv,
                cwd=cwd,
                env=env,
                timeout_s=timeout_s,
                output_chars=limits.output_chars,
                rlimits=rlimits,
                cgroup=cgroup,
                on_start=track,
                progress=current_progress(),
                on_output=None if run is None else run.log.add,
                lifeline=lifeline,
            )
            hits = cgroup.limit_hits(limits.max_processes, limits.memory_mb) if cgroup else []
        finally:
            for forget in forget_cancel:
                forget()
            watch.close()
            with self._lock:
                self._running.difference_update(handles)
            if cgroup is not None:
                cgroup.kill_all()
                cgroup.remove()
        return self._result(cmd, outcome, timeout_s, policy, hits=hits, watch=watch, contained=contained)

    def _result(
        self,
        cmd: str,
        outcome: ProcessOutcome,
        timeout_s: float,
        policy: CommandPolicy,
        *,
        hits: Sequence[str] = (),
        watch: DiskWatch | None = None,
        contained: bool = True,
    ) -> ExecResult:
        """The :class:`ExecResult` for a finished host process, with notes on the limits hit."""
        limits = policy.limits
        notes: list[str] = []
        stopped: str | None = None
        quota = watch.quota if watch is not None else None
        if outcome.timed_out:
            stopped = "timeout"
            notes.append(f"timed out after {timeout_s:g} s: the command and every process it started were killed")
        elif outcome.stopped_by == QUOTA_STOP or (watch is not None and watch.exceeded):
            assert watch is not None
            stopped = QUOTA_STOP
            notes.append(_quota_note(limits, watch, ended=outcome.stopped_by != QUOTA_STOP))
        elif outcome.stopped_by == CANCEL_STOP:
            stopped = CANCEL_STOP
            notes.append("cancelled by the caller: the command and every process it started were killed")
        elif outcome.stopped_by == RUN_STOP:
            stopped = RUN_STOP
            notes.append("stopped on request: the command and every process it started were killed")
        elif outcome.stopped_by is not None:
            stopped = outcome.stopped_by
            notes.append("stopped: the sandbox shut down while the command ran")
        elif (
            contained
            and quota is not None
            and outcome.exit_code == 128 + signal.SIGXFSZ
            and quota.remaining_bytes < limits.file_size_mb * MIB
        ):
            stopped = QUOTA_STOP
            notes.append(
                f"killed by SIGXFSZ: a file reached {_mb(quota.remaining_bytes)} MB, what remained of the "
                f"workspace's {limits.disk_mb:,} MB disk quota ({_mb(quota.start_bytes)} MB were in use); "
                f"{QUOTA_ADVICE}"
            )
        else:
            note = signal_note(outcome.exit_code, limits)
            if note is not None:
                notes.append(note)
        notes += hits
        notes += outcome.notes
        return ExecResult(
            command=cmd,
            exit_code=outcome.exit_code,
            stdout=outcome.stdout,
            stderr=outcome.stderr,
            timed_out=outcome.timed_out,
            stopped=stopped,
            notes=tuple(notes),
            stdout_cut=outcome.stdout_cut,
            stderr_cut=outcome.stderr_cut,
            duration_ms=outcome.duration_ms,
            backend=self.mode,
        )

    def _refused(self, cmd: str, message: str) -> ExecResult:
        """A command refused before it ran, for a reason the caller can fix."""
        return ExecResult(command=cmd, exit_code=None, error=message, refused=True, backend=self.mode)

    def _failed(self, cmd: str, message: str) -> ExecResult:
        """A command the sandbox itself could not run."""
        return ExecResult(command=cmd, exit_code=None, error=message, backend=self.mode)

    def _cancelled(self, cmd: str) -> ExecResult:
        """A command whose call was cancelled before it started: it never ran."""
        error = "SandboxError: the call was cancelled before the command started; nothing was run."
        return ExecResult(command=cmd, exit_code=None, error=error, stopped=CANCEL_STOP, backend=self.mode)

    def _new_cgroup(self, policy: CommandPolicy) -> CommandCgroup | None:
        if not policy.options.use_cgroup:
            return None
        limits = policy.limits
        try:
            return CommandCgroup.create(limits.max_processes, limits.memory_mb * MIB)
        except OSError as exc:
            _warn_once("cgroup-create", f"sandbox: could not create a cgroup ({exc}); process limits only")
            return None

    def _child_rlimits(self, policy: CommandPolicy, quota: QuotaStart) -> list[tuple[int, int]]:
        """Rlimits for one command: the policy's, the file size capped by the disk quota.

        How the process count is capped is decided once per ``use_cgroup`` value: a cgroup
        when available; otherwise ``RLIMIT_NPROC`` for an ordinary user (set to the user's
        current count plus the allowance, since it counts all of the user's processes); for
        root nothing can, and a warning says so once.
        """
        use_cgroup = policy.options.use_cgroup
        with self._lock:
            known = use_cgroup in self._nproc
            base = self._nproc.get(use_cgroup)
        if not known:
            support = cgroup_support()
            base = None
            if use_cgroup and support.version is not None:
                base = None
            elif os.geteuid() == 0:
                reason = support.reason if use_cgroup else "cgroups are disabled by the options"
                _warn_once(
                    "root-nproc",
                    f"sandbox: the process count of commands is not limited: running as root and {reason} "
                    "(RLIMIT_NPROC does not bind root)",
                )
            else:
                base = user_process_count()
            with self._lock:
                self._nproc[use_cgroup] = base
        nproc = None if base is None else base + policy.limits.max_processes
        return rlimits_for(policy.limits, nproc=nproc, file_size_bytes=quota.remaining_bytes)

    # -- worker ----------------------------------------------------------------------------

    def _work_in_background(
        self,
        run: BackgroundRun,
        cwd: str,
        timeout_s: float | None,
        policy: CommandPolicy,
        around: contextlib.AbstractContextManager[Any] | None,
    ) -> None:
        result: ExecResult | None = None
        try:
            if run.stop_reason is not None:
                result = self._failed(run.command, "SandboxError: stopped before it started; nothing was run.")
            else:
                with around if around is not None else contextlib.nullcontext(), running_in_background(run):
                    result = self.execute(run.command, cwd, timeout_s, policy)
        except Exception as exc:  # a programming error: the run must still end
            logger.exception("sandbox: background run %s failed", run.run_id)
            result = self._failed(run.command, f"SandboxError: {type(exc).__name__}: {exc}")
        finally:
            run.finish(result or self._failed(run.command, "SandboxError: the run was interrupted."))
            with self._lock:
                self._workers.discard(threading.current_thread())

    def _work(
        self,
        future: pykka.Future[ExecResult],
        cmd: str,
        cwd: str,
        timeout_s: float | None,
        policy: CommandPolicy | None,
        cancel: CancelToken | None = None,
        progress: ProgressReporter | None = None,
    ) -> None:
        try:
            with cancelling(cancel), reporting(progress):
                future.set(self.execute(cmd, cwd, timeout_s, policy))
        except BaseException:
            future.set_exception()
        finally:
            with self._lock:
                self._workers.discard(threading.current_thread())


QUOTA_STOP = "disk quota"
"""``ExecResult.stopped`` of a command stopped because the workspace passed its disk quota."""

CANCEL_STOP = "cancelled"
"""``ExecResult.stopped`` of a command whose call its caller cancelled (killed, or never started)."""

_SLOT_POLL_S = 0.05
"""How often a command waiting for a slot looks whether its call was cancelled."""

QUOTA_ADVICE = "delete files you no longer need (rm), or write less, then run the command again"


def _mb(size: int) -> str:
    return f"{size / MIB:,.0f}"


def _quota_note(limits: ExecLimits, watch: DiskWatch, *, ended: bool) -> str:
    written = f"{_mb(watch.written_bytes)} MB were written"
    if ended:
        return (
            f"the workspace grew past its {limits.disk_mb:,} MB disk quota (now {_mb(watch.usage_bytes)} MB) "
            f"before the command ended; {written}; {QUOTA_ADVICE}"
        )
    return f"exceeded the workspace's {limits.disk_mb:,} MB disk quota; it was stopped; {written}; {QUOTA_ADVICE}"


class LocalSandboxActor(SandboxActor):
    """Mode ``local``: host processes with rlimits, a cgroup when available, a clean env.

    No filesystem or network isolation: a command reads what the host user reads. Each
    command is the child of a clean-environment launcher shell (see :mod:`.local` for what
    that does and does not hide of the host process), which kills the command's process
    group if this process dies before the command ends.
    """

    mode = "local"
    isolation = "process limits only, the host's files and network are reachable"
    options_class = LocalOptions
    shared_options = (*SandboxActor.shared_options, "hide_host_process")

    def _set_up(self) -> None:
        """With ``hide_host_process`` this process becomes non-dumpable (``WiringError`` off Linux)."""
        assert isinstance(self.options, LocalOptions)
        if self.options.hide_host_process:
            hide_host_process()

    def _execute(
        self, cmd: str, host_cwd: Path, rel_cwd: PurePosixPath, timeout_s: float, policy: CommandPolicy
    ) -> ExecResult:
        env = sandbox_env(home=str(self.workspace), path=local_path_env(self.workspace), options=policy.options)
        # The launcher kills the command's group if this process dies first (see .local).
        argv = launcher_argv(cmd, watch_lifeline=True)
        return self._spawn(cmd, argv, cwd=host_cwd, env=env, timeout_s=timeout_s, policy=policy, lifeline=True)


class BwrapSandboxActor(SandboxActor):
    """Mode ``bwrap``: each command in fresh Linux namespaces (see :mod:`.bwrap`)."""

    mode = "bwrap"
    isolation = "Linux namespaces, only /workspace is writable, no network unless allowed"
    options_class = BwrapOptions
    scratch_prefix = "toolcards-etc-"
    workspace_mount = WORKSPACE_MOUNT
    _etc: EtcSnapshot | None = None
    _egress: EgressProxy | None = None

    def _etc_snapshot(self) -> EtcSnapshot:
        scratch = self._scratch_dir()
        with self._lock:
            if self._etc is None:
                self._etc = snapshot_etc(scratch / "etc")
            return self._etc

    def _egress_proxy(self) -> EgressProxy:
        from toolcards.sandbox._egress import EgressProxy  # asyncio: only for allowlisted commands

        scratch = self._scratch_dir()
        with self._lock:
            if self._egress is None:
                self._egress = EgressProxy(scratch)
            return self._egress

    def _execute(
        self, cmd: str, host_cwd: Path, rel_cwd: PurePosixPath, timeout_s: float, policy: CommandPolicy
    ) -> ExecResult:
        options = policy.options
        assert isinstance(options, BwrapOptions)
        shell = "bash" if Path("/usr/bin/bash").exists() else "sh"
        command = [shell, "-c", cmd]
        gate: EgressGate | None = None
        if options.allowed_hosts:
            python = _python_inside(options)
            gate = self._open_gate(options)
            command = forwarder_argv(python, f"{EGRESS_MOUNT}/{gate.socket_path.name}", command)
        try:
            argv = bwrap_argv(
                workspace=self.workspace,
                rel_cwd=rel_cwd,
                command=command,
                options=options,
                etc=self._etc_snapshot(),
                egress=None if gate is None else gate.directory,
            )
            env = sandbox_env(
                home=WORKSPACE_MOUNT,
                path=bwrap_path_env(self.workspace, options),
                tmpdir="/tmp",
                options=options,
            )
            if gate is not None:
                env = {**env, **proxy_env(), **options.env}
            result = self._spawn(cmd, argv, cwd=self.workspace, env=env, timeout_s=timeout_s, policy=policy)
        finally:
            if gate is not None:
                self._egress_proxy().close_gate(gate)
        if gate is not None and gate.notes():
            result = result.model_copy(update={"notes": (*result.notes, *gate.notes())})
        return result

    def _open_gate(self, options: BwrapOptions) -> EgressGate:
        """A gate of the sandbox's proxy for one command; a background run's log hears its refusals."""
        run = current_run()

        def note(message: str) -> None:
            if run is not None:
                run.log.add_text(f"\n[network: {message}]\n")

        try:
            return self._egress_proxy().open(HostAllowlist(options.allowed_hosts), options.resolve, on_refusal=note)
        except OSError as exc:
            raise SpawnFailed(f"could not open the network proxy's socket: {exc}") from exc

    def _close(self) -> None:
        if self._egress is not None:
            self._egress.close()


def _python_inside(options: BwrapOptions) -> str:
    """A Python the sandbox can run (for the forwarder): toolcards' own when bound, else the system's.

    Raises:
        SpawnFailed: none is there; the message says how to get one.
    """
    if options.bind_python:
        return sys.executable
    if Path("/usr/bin/python3").exists():
        return "/usr/bin/python3"
    raise SpawnFailed(
        "a network allowlist needs a Python inside the sandbox for its forwarder: keep bind_python on "
        "or install python3 under /usr"
    )


class SeatbeltSandboxActor(SandboxActor):
    """Mode ``seatbelt``: each command under a generated macOS ``sandbox-exec`` profile."""

    mode = "seatbelt"
    isolation = "macOS sandbox profile, writes only to the workspace and a temp dir, no network unless allowed"
    options_class = SeatbeltOptions

    def _execute(
        self, cmd: str, host_cwd: Path, rel_cwd: PurePosixPath, timeout_s: float, policy: CommandPolicy
    ) -> ExecResult:
        options = policy.options
        assert isinstance(options, SeatbeltOptions)
        tmpdir = self._scratch_dir()
        argv = seatbelt_argv(
            workspace=self.workspace,
            tmpdir=tmpdir,
            command=shell_argv(cmd),
            options=options,
            python_prefixes=python_bin_dirs(),
        )
        env = sandbox_env(
            home=str(self.workspace),
            path=local_path_env(self.workspace),
            tmpdir=str(tmpdir),
            options=options,
        )
        return self._spawn(cmd, argv, cwd=host_cwd, env=env, timeout_s=timeout_s, policy=policy)


class DockerSandboxActor(SandboxActor):
    """Mode ``docker``: one container per team, started lazily, removed at stop.

    The container's limits are the actor's: memory, CPU, pids and the rlimits are set when
    it starts, so they and the container's options are shared settings (a card that
    differs cannot bind); the allowlist, deadline, environment and disk quota are per call.
    """

    mode = "docker"
    isolation = "a container per team, only /workspace and /tmp writable, no network unless allowed"
    options_class = DockerOptions
    workspace_mount = CONTAINER_WORKSPACE
    shared_options = (
        *SandboxActor.shared_options,
        "image",
        "docker_path",
        "allow_network",
        "cpus",
        "tmp_size_mb",
        "container_prefix",
    )
    shared_limits = ("cpu_s", "memory_mb", "file_size_mb", "max_processes", "open_files")

    _CLIENT_GRACE_S = 10.0
    """Extra seconds the host waits for ``docker exec`` after the in-container deadline."""

    def _set_up(self) -> None:
        assert isinstance(self.options, DockerOptions)
        self.container = DockerContainer(workspace=self.workspace, limits=self.limits, options=self.options)

    def _execute(
        self, cmd: str, host_cwd: Path, rel_cwd: PurePosixPath, timeout_s: float, policy: CommandPolicy
    ) -> ExecResult:
        self.container.ensure_started()
        path = CONTAINER_PATH
        if (self.workspace / ".venv" / "bin").is_dir():
            path = f"{CONTAINER_WORKSPACE}/.venv/bin:{path}"
        env = sandbox_env(home=CONTAINER_WORKSPACE, path=path, tmpdir="/tmp", options=policy.options)
        command_id = uuid.uuid4().hex[:12]
        argv = self.container.exec_argv(cmd, rel_cwd, timeout_s, env, command_id=command_id)
        # The docker client itself needs the host's DOCKER_* settings; the command does not
        # see them (its environment is the -e list above).
        result = self._spawn(
            cmd,
            argv,
            cwd=self.workspace,
            env=dict(os.environ),
            timeout_s=timeout_s + self._CLIENT_GRACE_S,
            policy=policy,
            contained=False,
            stop_inside=lambda: self.container.kill_command(command_id),
        )
        if result.exit_code == TIMEOUT_EXIT_CODE and result.stopped is None and result.duration_ms >= timeout_s * 1000:
            note = f"timed out after {timeout_s:g} s: the command and every process it started were killed"
            result = result.model_copy(update={"timed_out": True, "stopped": "timeout", "notes": (note, *result.notes)})
        return result

    def _close(self) -> None:
        self.container.remove()


class SandboxProxy(ActorMemberMixin, pykka.ActorProxy[SandboxActor]):
    """Typed proxy: ``proxy.run(...)`` is a future of the future of an :class:`ExecResult`."""

    run = proxy_method(SandboxActor.run)
    start_run = proxy_method(SandboxActor.start_run)
    run_of = proxy_method(SandboxActor.run_of)
    runs_of = proxy_method(SandboxActor.runs_of)
    conflicts = proxy_method(SandboxActor.conflicts)
    describe = proxy_method(SandboxActor.describe)
    owner: pykka.Future[str]
    """Which card started the team's sandbox (for messages naming both)."""


SANDBOX_ACTOR_CLASSES: dict[str, type[SandboxActor]] = {
    "local": LocalSandboxActor,
    "bwrap": BwrapSandboxActor,
    "docker": DockerSandboxActor,
    "seatbelt": SeatbeltSandboxActor,
}
"""Sandbox actor class per mode. Add a backend by inserting its class before teams start."""


def sandbox_actor_class(mode: str, *, docker_image: str | None = None) -> type[SandboxActor]:
    """The actor class for ``mode``; ``"auto"`` probes the host (see :mod:`.probe`).

    Blocks while ``auto`` probes (once per process).

    Raises:
        WiringError: no class is registered under ``mode``; the message lists the modes.
    """
    if mode == "auto":
        mode = choose_mode(docker_image=docker_image or DockerOptions().image)
    try:
        return SANDBOX_ACTOR_CLASSES[mode]
    except KeyError:
        known = ", ".join(sorted([*SANDBOX_ACTOR_CLASSES, "auto"]))
        raise WiringError(
            f"Unknown sandbox mode {mode!r}. Known modes: {known}. "
            "Register a backend in toolcards.sandbox.SANDBOX_ACTOR_CLASSES before use."
        ) from None
