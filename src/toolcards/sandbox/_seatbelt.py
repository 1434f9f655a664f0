"""The ``seatbelt`` backend's profile: macOS ``sandbox-exec`` around each command.

The profile denies everything by default, then allows: running and forking programs,
signals within the sandbox, reading system locations (:data:`SYSTEM_READ_PATHS`), the
workspace, the team's temp directory and the configured extra paths; writing only to the
workspace, the temp directory and a few device files; and the network only with
``allow_network``. Paths enter as ``-D`` parameters, never spliced into the profile text,
so no path can change the profile's meaning.

Process limits are the same rlimits as ``local``; macOS has no cgroups, so the process
count is capped with ``RLIMIT_NPROC`` (counted per user, set above the user's current count).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from toolcards.sandbox._models import SeatbeltOptions

__all__ = ["SYSTEM_READ_PATHS", "seatbelt_argv", "seatbelt_available", "seatbelt_profile"]

SYSTEM_READ_PATHS: tuple[str, ...] = (
    "/System",
    "/usr",
    "/bin",
    "/sbin",
    "/Library/Developer/CommandLineTools",
    "/Library/Frameworks",
    "/Applications/Xcode.app",
    "/private/etc",
    "/private/var/db/timezone",
    "/opt/homebrew",
    "/usr/local",
    "/dev",
)
"""Locations every command may read: the system, developer tools, Homebrew."""

_MACH_SERVICES = (
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.notification_center",
    "com.apple.system.logger",
    "com.apple.logd",
    "com.apple.SecurityServer",
    "com.apple.trustd.agent",
    "com.apple.coreservices.launchservicesd",
)


def seatbelt_profile(*, allow_network: bool, read_params: int) -> str:
    """The profile text; reads ``(param "WORKSPACE")``, ``"TMPDIR"`` and ``"RO_0"``...``"RO_{n-1}"``."""
    reads = "\n".join(f'  (subpath "{path}")' for path in SYSTEM_READ_PATHS)
    extra = "\n".join(f'  (subpath (param "RO_{index}"))' for index in range(read_params))
    services = " ".join(f'(global-name "{name}")' for name in _MACH_SERVICES)
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-exec)",
        "(allow process-fork)",
        "(allow signal (target same-sandbox))",
        "(allow sysctl-read)",
        "(allow ipc-posix-sem)",
        "(allow ipc-posix-shm)",
        f"(allow mach-lookup {services})",
        "(allow file-read-metadata)",
        "(allow file-read*",
        reads,
        '  (subpath (param "WORKSPACE"))',
        '  (subpath (param "TMPDIR"))',
        *([extra] if extra else []),
        ")",
        "(allow file-write*",
        '  (subpath (param "WORKSPACE"))',
        '  (subpath (param "TMPDIR"))',
        '  (literal "/dev/null")',
        '  (literal "/dev/zero")',
        '  (literal "/dev/dtracehelper")',
        '  (regex #"^/dev/tty")',
        ")",
        '(allow file-ioctl (literal "/dev/null") (regex #"^/dev/tty"))',
    ]
    if allow_network:
        lines.append("(allow network*)")
        lines.append("(allow system-socket)")
    return "\n".join(lines) + "\n"


def seatbelt_argv(
    *,
    workspace: Path,
    tmpdir: Path,
    command: Sequence[str],
    options: SeatbeltOptions,
    python_prefixes: Sequence[str] = (),
) -> list[str]:
    """``sandbox-exec -p PROFILE -D WORKSPACE=... -D TMPDIR=... [-D RO_i=...] command...``.

    Paths are resolved first: the kernel checks real paths (``/tmp`` is ``/private/tmp``).
    """
    ro_paths = [os.path.realpath(path) for path in (*python_prefixes, *options.ro_paths)]
    ro_paths = list(dict.fromkeys(ro_paths))
    argv = [
        options.sandbox_exec_path,
        "-p",
        seatbelt_profile(allow_network=options.allow_network, read_params=len(ro_paths)),
        "-D",
        f"WORKSPACE={os.path.realpath(workspace)}",
        "-D",
        f"TMPDIR={os.path.realpath(tmpdir)}",
    ]
    for index, path in enumerate(ro_paths):
        argv += ["-D", f"RO_{index}={path}"]
    return [*argv, *command]


@cache
def seatbelt_available(sandbox_exec_path: str = "/usr/bin/sandbox-exec") -> bool:
    """Whether this is macOS with ``sandbox-exec`` (cached)."""
    return sys.platform == "darwin" and Path(sandbox_exec_path).exists()
