"""The sandbox's data: resource limits, backend options and the result of one command.

Everything here is plain pydantic (no pykka), so a card can carry limits and options in
its configuration and a result can cross any channel.

``ExecResult.render`` is what a model reads: the exit code, then stdout and stderr, each
cut to a share of the budget keeping its head and tail, with a line saying how many
characters were cut and how to keep them next time (the middle is not kept anywhere).
Errors are results too (``error`` set, ``exit_code`` ``None``): a refused or failed
command never raises here; ``ExecTool`` turns them into the errors a model reads.

:class:`CommandPolicy` is what one card allows its commands (limits, allowlist, deadline,
backend options). Every call carries its card's policy and the team's one sandbox applies
it to that command alone, so agents with different cards never share settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "CAPTURE_MARKER",
    "DEFAULT_ALLOWED_COMMANDS",
    "BwrapOptions",
    "CommandPolicy",
    "DockerOptions",
    "ExecLimits",
    "ExecResult",
    "LocalOptions",
    "SandboxOptions",
    "SeatbeltOptions",
]

DEFAULT_ALLOWED_COMMANDS: tuple[str, ...] = (
    "python",
    "python3",
    "pytest",
    "ruff",
    "mypy",
    "git",
    "uv",
    "pip",
    "cat",
    "ls",
    "find",
    "grep",
    "mkdir",
    "cp",
    "mv",
    "rm",
    "echo",
    "touch",
    "curl",
    "wget",
    "make",
    "bash",
    "sh",
    "node",
    "npm",
    "npx",
)
"""First words a command may start with unless the options say otherwise.

A usability filter that tells the model early what is expected, not a security boundary:
``bash -c`` or ``python -c`` run anything. The backend (namespaces, container, profile,
limits) is what contains a command.
"""


class ExecLimits(BaseModel):
    """Resource limits applied to every command (each process, or the command's group).

    ``memory_mb`` is enforced with ``RLIMIT_DATA`` rather than ``RLIMIT_AS``: an address-space
    cap stops node and java from starting at all (they reserve large virtual ranges), while
    a data cap lets them start and still stops a process that really allocates. Where a
    cgroup is available the same figure also caps the whole command's resident memory.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_s: int = Field(default=30, ge=1)
    """CPU seconds per process (``RLIMIT_CPU``); the process gets SIGXCPU, then SIGKILL."""
    memory_mb: int = Field(default=512, ge=16)
    """Memory per process (``RLIMIT_DATA``) and per command (cgroup), in MiB."""
    file_size_mb: int = Field(default=100, ge=1)
    """Largest file a process may write (``RLIMIT_FSIZE``), in MiB."""
    max_processes: int = Field(default=256, ge=4)
    """Processes and threads one command may have alive at once (cgroup pids limit)."""
    open_files: int = Field(default=256, ge=16)
    """File descriptors per process (``RLIMIT_NOFILE``)."""
    output_chars: int = Field(default=20_000, ge=200)
    """Characters of stdout and of stderr kept while a command runs: the first two fifths and
    the last three fifths of this many of each stream. The middle of a longer stream is
    counted and dropped, not kept anywhere: a command's output is bounded only by its
    deadline. Send it to a file in the workspace to keep all of it."""
    disk_mb: int = Field(default=1_024, ge=1)
    """Disk space the workspace tree may use when a command writes to it, in MiB (as ``du``
    counts it: allocated blocks, hard links once, other filesystems left out). Each file is
    capped at what remains (``RLIMIT_FSIZE``) and a watchdog stops the command when the tree
    grows past it. Files a command writes outside the workspace (its private ``/tmp``) are
    not counted."""


class SandboxOptions(BaseModel):
    """Options every backend understands. Backends extend this with their own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allowed_commands: tuple[str, ...] = DEFAULT_ALLOWED_COMMANDS
    """First words a command may start with; empty means any (see ``DEFAULT_ALLOWED_COMMANDS``)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables set for every command. Never put secrets here."""
    pass_env: tuple[str, ...] = ()
    """Names of host variables copied in on top of the built-in allowlist."""
    max_concurrent: int = Field(default=4, ge=1)
    """Commands of one team running at once; more wait their turn (the actor stays free)."""
    use_cgroup: bool = True
    """Put each command in its own cgroup (pids and memory limits) when the host allows it."""


class LocalOptions(SandboxOptions):
    """The ``local`` backend: process limits only, no filesystem or network isolation."""

    backend: Literal["local"] = "local"
    """The backend these options are for (set from the card's ``mode``)."""
    hide_host_process: bool = False
    """Mark the process running toolcards non-dumpable (Linux ``prctl(PR_SET_DUMPABLE, 0)``)
    when the sandbox starts, so commands of the same non-root user can no longer read its
    ``/proc/<pid>/environ`` or memory. Process-wide and kept until the process exits: it
    also stops core dumps, debugger and profiler attach (gdb, py-spy) and the process's own
    reads of ``/proc/self/environ``. It does nothing against commands running as root."""


class BwrapOptions(SandboxOptions):
    """The ``bwrap`` backend (Linux bubblewrap)."""

    backend: Literal["bwrap"] = "bwrap"
    """The backend these options are for (set from the card's ``mode``)."""
    allow_network: bool = False
    """Share the host's network namespace (otherwise only a private loopback exists)."""
    allowed_hosts: tuple[str, ...] = ()
    """Hosts a command may reach through the sandbox's proxy, and no others: ``example.com``,
    ``*.example.org`` (its subdomains), an IP address, each with an optional ``:port`` (see
    :mod:`toolcards.sandbox._hosts`). The command keeps a network namespace of its own whose
    only way out is that proxy (``HTTP_PROXY``/``HTTPS_PROXY`` are set); each refusal is
    logged and noted in the command's result. Empty: no proxy. Excludes ``allow_network``."""
    resolve: dict[str, str] = Field(default_factory=dict)
    """Host name → address the proxy connects to instead of asking DNS (as curl's
    ``--resolve``): hosts on a private network, or test servers."""
    bind_python: bool = True
    """Bind the Python running toolcards (its venv and base prefix) read-only at the same
    paths and put its ``bin`` on ``PATH``, so ``python``/``pytest`` resolve inside. A
    ``.venv`` in the workspace comes first on ``PATH`` and wins."""
    ro_binds: tuple[str, ...] = ()
    """Extra host paths bound read-only at the same place (toolchains, caches)."""
    bwrap_path: str = "bwrap"
    """The bubblewrap executable."""

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts_parse(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        from toolcards.sandbox._hosts import HostAllowlist

        HostAllowlist(hosts)  # raises ValueError naming every bad entry
        return hosts

    @model_validator(mode="after")
    def _one_network(self) -> BwrapOptions:
        if self.allow_network and self.allowed_hosts:
            raise ValueError("allow_network shares the whole network; allowed_hosts limits it: give one of them")
        return self


class DockerOptions(SandboxOptions):
    """The ``docker`` backend: one container per team, ``docker exec`` per command."""

    backend: Literal["docker"] = "docker"
    """The backend these options are for (set from the card's ``mode``)."""
    image: str = "toolcards-sandbox:latest"
    """Image built from ``docker/Dockerfile``: ``docker build -t toolcards-sandbox docker/``."""
    docker_path: str = "docker"
    """The docker client executable."""
    allow_network: bool = False
    """Attach the container to docker's bridge network (otherwise it has none)."""
    cpus: float = Field(default=1.0, gt=0)
    """CPUs the container may use (``--cpus``)."""
    tmp_size_mb: int = Field(default=256, ge=1)
    """Size of the container's tmpfs ``/tmp``."""
    container_prefix: str = "toolcards-sandbox"
    """Name prefix of the team's container."""


class SeatbeltOptions(SandboxOptions):
    """The ``seatbelt`` backend (macOS ``sandbox-exec``)."""

    backend: Literal["seatbelt"] = "seatbelt"
    """The backend these options are for (set from the card's ``mode``)."""
    allow_network: bool = False
    """Allow network access (otherwise the profile denies it)."""
    ro_paths: tuple[str, ...] = ()
    """Extra host paths the command may read (system paths and the workspace always)."""
    sandbox_exec_path: str = "/usr/bin/sandbox-exec"
    """The ``sandbox-exec`` executable."""


@dataclass(frozen=True, kw_only=True)
class CommandPolicy:
    """What one card allows its commands; carried by every call to the team's sandbox.

    The sandbox actor is shared by a team, but each command runs under the policy of the
    card that sent it: a reviewer restricted to ``ls`` with 64 MB and a builder with the
    defaults use one actor without either seeing the other's settings. Settings a backend
    cannot apply per command (a docker container's limits) must agree across a team's
    cards; the card refuses to bind otherwise (see ``SandboxActor.conflicts``).
    """

    limits: ExecLimits
    """Resource limits of each command, its disk quota included."""
    timeout_s: float
    """The longest deadline of a command; a call may ask for less, never more."""
    options: SandboxOptions
    """The backend's options, the allowlist (``options.allowed_commands``) included."""


_NOT_KEPT = (
    "not kept; to read them, run the command again with its output sent to a file "
    "(cmd > out.log 2>&1) and read or grep that file"
)

_CUT_NOTE = "[... {n:,} characters cut from the middle of {name}, " + _NOT_KEPT + " ...]"

CAPTURE_MARKER = "[... {cut:,} characters of {name} dropped while capturing ...]"
"""The line left in a stream where capture dropped its middle (see ``ExecLimits.output_chars``).
Rendering within the same limit replaces it with the cut note, which says how to keep them."""


class ExecResult(BaseModel):
    """What one command did. ``exit_code`` is ``None`` when it never started (``error``).

    A timeout gives exit code 124; a death by signal N gives 128 + N, as shells report it.
    """

    model_config = ConfigDict(frozen=True)

    command: str
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    stopped: str | None = None
    """Why the sandbox stopped the command before it ended: ``"timeout"``, ``"disk quota"``
    (the workspace grew past ``ExecLimits.disk_mb``), ``"cancelled"`` (its caller cancelled
    the call) or ``"shutdown"``; ``None`` otherwise."""
    error: str | None = None
    """``CommandNotAllowedError: ...`` or ``SandboxError: ...``: the command did not run."""
    refused: bool = False
    """The command was refused before it ran for a reason the caller can fix (not allowed,
    a bad ``cwd`` or timeout, too long); ``False`` when ``error`` is the sandbox's own failure."""
    notes: tuple[str, ...] = ()
    """Limits that were hit and other facts the reader needs ("CPU time limit reached")."""
    stdout_cut: int = 0
    """Characters of stdout dropped while capturing (already marked inside ``stdout``)."""
    stderr_cut: int = 0
    """Characters of stderr dropped while capturing (already marked inside ``stderr``)."""
    duration_ms: float = 0.0
    backend: str = ""

    @property
    def ok(self) -> bool:
        """True when the command ran and exited 0."""
        return self.exit_code == 0 and self.error is None

    def render(self, max_chars: int = 20_000) -> str:
        """The text a model reads, at most about ``max_chars`` characters.

        An error is rendered alone. Otherwise: ``exit code: N``, the notes, then stdout and
        stderr (empty streams left out, trailing newlines dropped). When the streams do not
        fit, each gets half of the budget (a stream that needs less leaves the rest to the
        other) and keeps its head and tail around a line saying how many characters were cut,
        those capture dropped included, and how to keep them (they are not kept anywhere).
        """
        if self.error is not None:
            return self.error
        header = [f"exit code: {self.exit_code}"]
        header += [f"[{note}]" for note in self.notes]
        streams = [
            (name, text, dropped)
            for name, text, dropped in (
                ("stdout", self.stdout, self.stdout_cut),
                ("stderr", self.stderr, self.stderr_cut),
            )
            if text
        ]
        if not streams:
            return "\n".join([*header, "(no output)"])
        overhead = sum(len(line) + 1 for line in header) + sum(len(name) + 2 for name, _, _ in streams)
        budget = max(max_chars - overhead, 200)
        shares = _share(budget, [len(text) for _, text, _ in streams])
        parts = list(header)
        for (name, text, dropped), share in zip(streams, shares, strict=True):
            parts.append(f"{name}:")
            parts.append(_keep_head_and_tail(text, share, name, dropped).rstrip("\n"))
        return "\n".join(parts)


def _share(budget: int, sizes: list[int]) -> list[int]:
    """Split ``budget`` between streams: equal shares, unused share passed to the others."""
    if sum(sizes) <= budget:
        return sizes
    if len(sizes) == 1:
        return [budget]
    half = budget // 2
    small = min(sizes)
    if small <= half:
        return [size if size == small else budget - small for size in sizes]
    return [half, budget - half]


def _keep_head_and_tail(text: str, limit: int, name: str, dropped: int) -> str:
    """Cut the middle of ``text`` to fit ``limit``; the note counts what capture dropped too."""
    if len(text) <= limit:
        return text
    note_room = len(_CUT_NOTE.format(n=len(text) + dropped, name=name)) + 2
    keep = max(limit - note_room, 40)
    head = keep * 2 // 5
    tail = keep - head
    cut = len(text) - head - tail
    # Capture left its marker on a line of its own where it dropped the middle: count the
    # characters it stands for instead of the line.
    marker = f"\n{CAPTURE_MARKER.format(cut=dropped, name=name)}\n"
    if dropped and marker in text[head : len(text) - tail]:
        cut += dropped - len(marker)
    return f"{text[:head]}\n{_CUT_NOTE.format(n=cut, name=name)}\n{text[-tail:]}"
