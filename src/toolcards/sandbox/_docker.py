"""The ``docker`` backend's container: one per team, started on first use, removed at stop.

The container runs ``sleep infinity`` under ``--init`` with no network, a read-only root,
a tmpfs ``/tmp``, every capability dropped, ``no-new-privileges``, the host's uid:gid, and
memory, CPU and pids limits; the workspace is mounted read-write at ``/workspace``. Each
command is a ``docker exec`` of :data:`GROUP_WRAPPER`, which runs ``timeout -k 2 T bash -c
CMD`` and then kills ``timeout``'s process group. Killing the host's ``docker exec`` client
would not stop anything inside, so the deadline is enforced in the container: ``timeout``
leads a process group of its own, signals all of it at the deadline and exits 124; the
wrapper's final kill ends background processes of a command that finished, as on the other
backends. The wrapper writes that group's id to ``/tmp/.toolcards-cmd-ID`` while the
command runs, so :meth:`DockerContainer.kill_command` can stop it early from another
``docker exec`` (the disk quota's watchdog does).

Memory, CPU and pids limits are per container, so a team's concurrent commands share them;
``RLIMIT_CPU``, ``RLIMIT_FSIZE`` and ``RLIMIT_NOFILE`` are per process (``--ulimit``).
The image is ``docker/Dockerfile`` of the project; nothing is pulled or built on the fly.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Mapping
from functools import cache
from pathlib import Path, PurePosixPath

from toolcards.sandbox._models import DockerOptions, ExecLimits
from toolcards.sandbox._process import SpawnFailed

__all__ = [
    "CONTAINER_PATH",
    "CONTAINER_WORKSPACE",
    "GROUP_WRAPPER",
    "KILL_SCRIPT",
    "DockerContainer",
    "docker_available",
]

CONTAINER_WORKSPACE = "/workspace"
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_CLIENT_TIMEOUT_S = 60.0
"""Longest a ``docker image inspect``/``run``/``rm`` may take before it counts as failed."""

GROUP_WRAPPER = (
    'timeout -k 2 "$1" bash -c "$2" & pid=$!; echo "$pid" > "/tmp/.toolcards-cmd-$3" 2>/dev/null; '
    'wait "$pid"; rc=$?; kill -KILL "-$pid" 2>/dev/null; rm -f "/tmp/.toolcards-cmd-$3"; exit "$rc"'
)
"""``sh -c`` script run by ``docker exec`` with ``$1`` = deadline in seconds, ``$2`` = command,
``$3`` = the command's id (names the file holding its process group id).

``timeout`` sends SIGTERM to its group at the deadline and SIGKILL 2 s later. Written for
any POSIX ``sh`` (dash's ``kill`` takes ``-PGID`` but not ``--``)."""

KILL_SCRIPT = 'pgid=$(cat "/tmp/.toolcards-cmd-$1" 2>/dev/null) && kill -KILL "-$pgid"'
"""``sh -c`` script that stops the command whose id is ``$1`` (see :data:`GROUP_WRAPPER`)."""


class DockerContainer:
    """The team's container. Thread-safe: concurrent first commands start it once."""

    def __init__(self, *, workspace: Path, limits: ExecLimits, options: DockerOptions) -> None:
        self.workspace = workspace
        self.limits = limits
        self.options = options
        digest = hashlib.sha1(str(workspace).encode(), usedforsecurity=False).hexdigest()[:8]
        self.name = f"{options.container_prefix}-{digest}-{uuid.uuid4().hex[:8]}"
        self._lock = threading.Lock()
        self._started = False

    @property
    def started(self) -> bool:
        """Whether ``docker run`` succeeded and the container was not removed since."""
        return self._started

    def run_argv(self) -> list[str]:
        """``docker run -d ...``: the container's limits and mounts."""
        mib = 1024 * 1024
        limits, options = self.limits, self.options
        fsize = limits.file_size_mb * mib
        return [
            options.docker_path, "run", "-d",
            "--name", self.name,
            "--label", "toolcards.sandbox=1",
            "--init",
            "--network", "bridge" if options.allow_network else "none",
            "--memory", f"{limits.memory_mb}m",
            "--memory-swap", f"{limits.memory_mb}m",
            "--cpus", f"{options.cpus:g}",
            "--pids-limit", str(limits.max_processes),
            "--ulimit", f"cpu={limits.cpu_s}:{limits.cpu_s + 1}",
            "--ulimit", f"fsize={fsize}:{fsize}",
            "--ulimit", f"nofile={limits.open_files}:{limits.open_files}",
            "--ulimit", "core=0:0",
            "--read-only",
            "--tmpfs", f"/tmp:rw,nosuid,nodev,size={options.tmp_size_mb}m",
            "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges",
            "--user", f"{os.getuid()}:{os.getgid()}",
            "-v", f"{self.workspace}:{CONTAINER_WORKSPACE}:rw",
            "-w", CONTAINER_WORKSPACE,
            "-e", f"HOME={CONTAINER_WORKSPACE}",
            options.image,
            "sleep", "infinity",
        ]  # fmt: skip

    def exec_argv(
        self, cmd: str, rel_cwd: PurePosixPath, timeout_s: float, env: Mapping[str, str], *, command_id: str = "0"
    ) -> list[str]:
        """``docker exec ... sh -c GROUP_WRAPPER sandbox T CMD ID`` in ``rel_cwd`` of the workspace.

        ``command_id`` (letters and digits) is what :meth:`kill_command` takes to stop it.
        """
        workdir = CONTAINER_WORKSPACE if str(rel_cwd) == "." else f"{CONTAINER_WORKSPACE}/{rel_cwd}"
        argv = [self.options.docker_path, "exec", "-w", workdir]
        for key, value in env.items():
            argv += ["-e", f"{key}={value}"]
        argv += [self.name, "sh", "-c", GROUP_WRAPPER, "sandbox", f"{timeout_s:g}", cmd, command_id]
        return argv

    def kill_command(self, command_id: str) -> None:
        """SIGKILL the process group of the running command ``command_id`` inside the container.

        Blocks for one ``docker exec``; never raises (a command that already ended is fine).
        """
        if not self._started:
            return
        with contextlib.suppress(SpawnFailed):
            self._client([self.options.docker_path, "exec", self.name, "sh", "-c", KILL_SCRIPT, "sandbox", command_id])

    def ensure_started(self) -> None:
        """Start the container unless it runs already. Blocks while ``docker run`` works.

        Raises:
            SpawnFailed: the image is missing (the message gives the build command) or
                ``docker run`` failed (the message quotes docker's error).
        """
        with self._lock:
            if self._started:
                return
            docker = self.options.docker_path
            inspect = self._client([docker, "image", "inspect", "--format", "{{.Id}}", self.options.image])
            if inspect.returncode != 0:
                raise SpawnFailed(
                    f"docker image {self.options.image!r} is not available "
                    f"({_first_line(inspect.stderr)}). Build it with: "
                    f"docker build -t {self.options.image} docker/"
                )
            started = self._client(self.run_argv())
            if started.returncode != 0:
                raise SpawnFailed(f"docker run failed: {_first_line(started.stderr)}")
            self._started = True

    def remove(self) -> None:
        """``docker rm -f`` the container if it was started. Blocks; never raises."""
        with self._lock:
            if not self._started:
                return
            self._started = False
            try:
                self._client([self.options.docker_path, "rm", "-f", self.name])
            except SpawnFailed:
                return

    def _client(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=_CLIENT_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise SpawnFailed(f"{argv[0]} {argv[1]} failed: {exc}") from exc


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "no message"


@cache
def docker_available(docker_path: str = "docker", image: str = DockerOptions().image) -> bool:
    """Whether a docker daemon answers and has ``image`` (cached; blocks up to 5 s once)."""
    exe = shutil.which(docker_path)
    if exe is None:
        return False
    try:
        done = subprocess.run(
            [exe, "image", "inspect", "--format", "{{.Id}}", image],
            capture_output=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
