"""The ``local`` backend's pieces: how a command is started on the host, and its ``PATH``.

``local`` isolates nothing but the process: each command gets its own session, rlimits, a
cgroup when the host has one, and an allowlisted environment. It sees the host's files and
network, and every process of the same user, so what it can learn of the process running
toolcards is bounded only by the OS:

* Its parent is a small launcher shell started with the clean environment
  (:data:`LAUNCHER`), so ``/proc/$PPID/environ`` holds no API key. The launcher's parent
  is still the host process, and ``/proc/<pid>/environ`` of any process of the same user
  is readable to a non-root command (as is its memory where ``ptrace`` is allowed), and to
  a root command always.
* ``LocalOptions.hide_host_process`` marks the host process non-dumpable
  (:func:`hide_host_process`): a non-root command can then read neither its environment nor
  its memory. Nothing local protects against a command running as root.

Keep secrets out of the environment of a process that runs ``local`` commands, or use
``bwrap``/``docker``, whose commands see a fresh ``/proc`` without the host's processes.

A command must not outlive the process running toolcards, even one killed with ``kill -9``
(nothing would enforce its deadline again). The launcher's stdin is a *lifeline*: a pipe whose
write end only that process holds (:func:`~toolcards.sandbox._process.run_process` with
``lifeline``; a child it forks without exec'ing, as multiprocessing's ``fork`` does, holds it
too while it lives). The kernel closes it when that process exits, however it exits; a watcher
the launcher forks blocks reading it and, at its end, kills the launcher's process group. A
parent-death signal (``PR_SET_PDEATHSIG``) would not do: it reaches only the launcher, not
the command and what it started, and it fires when the spawning *thread* ends. The watcher is
one more small process of each command (it counts towards the process limit).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sys
from pathlib import Path

from toolcards.errors import WiringError

__all__ = ["LAUNCHER", "hide_host_process", "launcher_argv", "local_path_env", "shell_argv"]

LAUNCHER = (
    'if [ -n "$3" ]; then exec 3<&0 </dev/null; '
    '{ read -r _ <&3; kill -s KILL -- "-$$"; } >/dev/null 2>&1 & exec 3<&-; fi; '
    '"$1" -c "$2"; exit "$?"'
)
"""The launcher's script (``$1`` the command's shell, ``$2`` the command, ``$3`` non-empty to
watch the lifeline on stdin): run the command in a child shell and pass on its status.

Two commands, so the launcher cannot replace itself with the command (an ``exec``): it
stays the command's parent, and its own environment is the command's clean one. It runs
under ``/bin/sh``, which starts faster than bash (dash on Debian).

Watching, the launcher moves its stdin (the lifeline) to descriptor 3 and forks the watcher
with it: ``read`` returns at the lifeline's end, then the watcher kills the process group
whose id is the launcher's pid (its own, when the launcher leads a session; no group
otherwise, so nothing). The command itself gets ``/dev/null`` as stdin and not the lifeline."""

_PR_SET_DUMPABLE = 4


def shell_argv(cmd: str) -> list[str]:
    """``bash -c cmd`` (``sh -c`` where bash is missing): commands use shell syntax."""
    shell = shutil.which("bash") or "/bin/sh"
    return [shell, "-c", cmd]


def launcher_argv(cmd: str, *, watch_lifeline: bool = False) -> list[str]:
    """``/bin/sh -c LAUNCHER sh bash cmd``: the command runs as the child of a clean-env shell.

    Costs one more small shell (about half a millisecond). The exit status is the
    command's; a command killed by signal N exits the launcher with 128 + N, as shells
    report it. With ``watch_lifeline`` the launcher's stdin must be a lifeline and the
    launcher a session leader (``run_process(..., lifeline=True)`` does both): its group is
    killed when the lifeline ends, that is, at once if stdin is not one.
    """
    shell = shutil.which("bash") or "/bin/sh"
    return ["/bin/sh", "-c", LAUNCHER, "sh", shell, cmd, *(["watch"] if watch_lifeline else [])]


def hide_host_process() -> None:
    """Mark this process non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``). Process-wide.

    Afterwards a process of the same non-root user cannot read this one's
    ``/proc/<pid>/environ``, ``mem`` or attach a debugger; core dumps are off, and this
    process cannot read its own ``/proc/self/environ`` either. Root is not stopped.

    Raises:
        WiringError: not Linux, or the call failed.
    """
    if not sys.platform.startswith("linux"):
        raise WiringError(f"LocalOptions.hide_host_process needs Linux (prctl); this is {sys.platform}.")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise WiringError(f"LocalOptions.hide_host_process: prctl(PR_SET_DUMPABLE) failed: {os.strerror(errno)}.")


def local_path_env(workspace: Path) -> str:
    """``PATH`` for a host command: the workspace's ``.venv/bin`` (if any), then the host's."""
    dirs: list[str] = []
    venv_bin = workspace / ".venv" / "bin"
    if venv_bin.is_dir():
        dirs.append(str(venv_bin))
    dirs += (os.environ.get("PATH") or os.defpath).split(os.pathsep)
    return os.pathsep.join(dict.fromkeys(d for d in dirs if d))
