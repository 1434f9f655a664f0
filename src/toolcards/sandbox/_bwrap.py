"""The ``bwrap`` backend's command line: Linux bubblewrap namespaces around each command.

What a command sees inside:

* ``/usr`` read-only, with ``/lib``, ``/lib64``, ``/bin`` and ``/sbin`` as on the host;
* a read-only ``/etc`` holding only a copy of :data:`ETC_ENTRIES`, taken once per sandbox by
  :func:`snapshot_etc`. Not ``/etc/shadow``, SSH host keys or ``/etc/ssl/private``: a caller
  running as root keeps owner access to root-owned files even with every capability dropped,
  so what must not be read must not be there (one bind also keeps the spawn cheap);
* the workspace read-write at ``/workspace`` (``HOME``), a private ``/tmp``, a fresh ``/proc``
  and a minimal ``/dev``;
* with ``bind_python``, toolcards' Python (venv and base prefix) read-only at its host paths,
  ``/workspace/.venv/bin`` first on ``PATH`` when it exists;
* no network unless ``allow_network`` (with ``allowed_hosts``, only the proxy's socket at
  :data:`~.forwarder.EGRESS_MOUNT`: :mod:`.egress`); new PID, IPC, UTS and cgroup namespaces;
  no capabilities; its own session; ``--die-with-parent``, which follows the worker thread
  waiting for this very command, so it never fires early.

Killing bwrap's process group kills everything inside: bwrap is init of the PID namespace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

from toolcards.sandbox._environment import python_bin_dirs
from toolcards.sandbox._forwarder import EGRESS_MOUNT
from toolcards.sandbox._models import BwrapOptions

__all__ = [
    "ETC_ENTRIES",
    "WORKSPACE_MOUNT",
    "EtcSnapshot",
    "bwrap_argv",
    "bwrap_available",
    "bwrap_path_env",
    "snapshot_etc",
]

WORKSPACE_MOUNT = "/workspace"

ETC_ENTRIES: tuple[str, ...] = (
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "gitconfig",
    "group",
    "host.conf",
    "hostname",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "localtime",
    "lsb-release",
    "magic",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "pki/tls/certs",
    "profile",
    "protocols",
    "resolv.conf",
    "services",
    "ssl/certs",
    "ssl/openssl.cnf",
    "terminfo",
    "timezone",
)
"""Entries of ``/etc`` bound read-only when they exist; everything else in it is absent."""

_ROOT_LINKS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")


@cache
def _system_layout() -> tuple[str, ...]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _ROOT_LINKS:
        path = Path("/", name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    return tuple(args)


@dataclass(frozen=True, kw_only=True)
class EtcSnapshot:
    """The sandbox's ``/etc``: a copy of the allowlisted files plus host directories."""

    path: Path
    """Directory bound read-only at ``/etc``."""
    directories: tuple[str, ...]
    """Allowlisted ``/etc`` directories (``alternatives``, ``ssl/certs``) bound on top of it:
    hundreds of small entries are cheaper to bind than to copy."""


def snapshot_etc(dest: Path, source: Path = Path("/etc")) -> EtcSnapshot:
    """Copy the :data:`ETC_ENTRIES` files of ``source`` that exist and are readable into ``dest``.

    Files are copied with their content (a symlinked ``resolv.conf`` would dangle inside);
    for directories an empty mount point is made and they are bound at spawn. Blocks for
    a few ms.
    """
    dest.mkdir(parents=True, exist_ok=True)
    dest.chmod(0o755)
    directories: list[str] = []
    for entry in ETC_ENTRIES:
        src, dst = source / entry, dest / entry
        try:
            if src.is_dir():
                dst.mkdir(parents=True, exist_ok=True)
                directories.append(entry)
            elif src.is_file():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
        except OSError:
            continue
    return EtcSnapshot(path=dest, directories=tuple(directories))


def _python_binds() -> list[str]:
    args: list[str] = []
    seen: set[str] = set()
    for prefix in (sys.prefix, sys.base_prefix):
        real = os.path.realpath(prefix)
        for path in dict.fromkeys((prefix, real)):
            if path in seen or path == "/usr" or path.startswith("/usr/"):
                continue
            seen.add(path)
            args += ["--ro-bind", path, path]
    return args


def bwrap_path_env(workspace: Path, options: BwrapOptions) -> str:
    """``PATH`` inside: the workspace venv (if any), toolcards' Python (if bound), system dirs."""
    dirs: list[str] = []
    if (workspace / ".venv" / "bin").is_dir():
        dirs.append(f"{WORKSPACE_MOUNT}/.venv/bin")
    if options.bind_python:
        dirs += python_bin_dirs()
    dirs += ["/usr/local/bin", "/usr/bin", "/bin"]
    return ":".join(dict.fromkeys(dirs))


def bwrap_argv(
    *,
    workspace: Path,
    rel_cwd: PurePosixPath,
    command: Sequence[str],
    options: BwrapOptions,
    etc: EtcSnapshot | None = None,
    egress: Path | None = None,
) -> list[str]:
    """The full ``bwrap ... -- command`` argv for one command in ``rel_cwd`` of the workspace.

    ``etc`` (from :func:`snapshot_etc`) becomes a read-only ``/etc``; without it the
    sandbox has no ``/etc``. ``egress`` (a gate's directory) is bound read-only at
    :data:`~.forwarder.EGRESS_MOUNT`.
    """
    # Mount order matters: a later mount hides what an earlier one put below it, so the
    # private /tmp comes before the binds (toolcards' own Python may live under /tmp).
    args = [options.bwrap_path, *_system_layout(), "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    if etc is not None:
        args += ["--ro-bind", str(etc.path), "/etc"]
        for entry in etc.directories:
            args += ["--ro-bind", f"/etc/{entry}", f"/etc/{entry}"]
    if options.bind_python:
        args += _python_binds()
    for path in options.ro_binds:
        args += ["--ro-bind-try", path, path]
    if egress is not None:
        args += ["--ro-bind", str(egress), EGRESS_MOUNT]
    chdir = WORKSPACE_MOUNT if str(rel_cwd) == "." else f"{WORKSPACE_MOUNT}/{rel_cwd}"
    args += [
        "--bind", str(workspace), WORKSPACE_MOUNT,
        "--chdir", chdir,
        "--unshare-all",
    ]  # fmt: skip
    if options.allow_network:
        args.append("--share-net")
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--", *command]
    return args


@cache
def bwrap_available(bwrap_path: str = "bwrap") -> bool:
    """Whether bubblewrap exists and can create its namespaces here (runs it once, cached).

    Blocks up to 5 s the first time.
    """
    exe = shutil.which(bwrap_path)
    if exe is None or not sys.platform.startswith("linux"):
        return False
    argv = [exe, *_system_layout(), "--unshare-all", "--die-with-parent", "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
