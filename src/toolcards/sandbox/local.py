"""The ``local`` backend's pieces: the shell and ``PATH`` of a command run on the host.

``local`` isolates nothing but the process: each command gets its own session, rlimits, a
cgroup when the host has one, and an allowlisted environment. It sees the host's files and
network. Use it where no other backend is available, knowing that.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["local_path_env", "shell_argv"]


def shell_argv(cmd: str) -> list[str]:
    """``bash -c cmd`` (``sh -c`` where bash is missing): commands use shell syntax."""
    shell = shutil.which("bash") or "/bin/sh"
    return [shell, "-c", cmd]


def local_path_env(workspace: Path) -> str:
    """``PATH`` for a host command: the workspace's ``.venv/bin`` (if any), then the host's."""
    dirs: list[str] = []
    venv_bin = workspace / ".venv" / "bin"
    if venv_bin.is_dir():
        dirs.append(str(venv_bin))
    dirs += (os.environ.get("PATH") or os.defpath).split(os.pathsep)
    return os.pathsep.join(dict.fromkeys(d for d in dirs if d))
