"""``TreeLock``: one workspace tree is changed by one process at a time, whichever host.

The :class:`~toolcards.workspace._actor.WorkspaceActor` serializes a tree's mutations only
within its process. Without more, two processes that read the same version could both pass
the read-before-write gate and both replace the file, losing one edit silently.

**What is locked.** One OS file lock per tree, held around the whole of each mutation (the
read of the current bytes, the gate, the atomic writes, a multi-file rollback) and never while
a model thinks. Reads take none: atomic writes already show readers a whole version. A waiter
polls for up to :data:`LOCK_TIMEOUT_S`, then fails with :class:`~toolcards.errors.ToolFailed`,
writing nothing.

**Where.** ``internal_dir()/"locks"/"<tree name>-<hash>.lock"``, outside every tree so no agent
can touch it; the hash is of the tree's path relative to the workspaces root, so hosts mounting
the root at different places agree. Lock files are never deleted: one deleted while held open
would let two holders lock two files.

**Which lock.** ``fcntl`` record locks on the whole file, because NFS and SMB clients forward
them to the server (``flock`` is emulated locally on some). On Linux they are
open-file-description locks (``F_OFD_SETLK``), owned by the open file, so two actors of one
process exclude each other too. Elsewhere :func:`fcntl.lockf` is used: per process (the actor
registry keeps one actor per tree per process), and released by closing *any* descriptor of the
file (only this lock opens it). The descriptor is kept from first use to :meth:`TreeLock.close`
(the actor's ``on_stop``); a dead process releases its locks (on NFSv4 when its lease expires).

**Across hosts** the root must be a shared volume whose ``fcntl`` locks reach every host
(NFSv4, NFSv3 with its lock manager, an SMB share with locking). :func:`probe_tree_locks`
checks the volume once per process, so the first mutation refuses to run where locks do not
work (a server should call it at start); it cannot see whether another host honours them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import re
import secrets
import struct
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from toolcards.errors import ToolFailed
from toolcards.fs._locations import internal_dir, workspaces_root

__all__ = ["LOCK_TIMEOUT_S", "OFD_LOCKS", "TreeLock", "probe_tree_locks", "tree_lock_path"]

logger = logging.getLogger(__name__)

LOCK_TIMEOUT_S = 30.0
"""How long a mutation waits for its tree's lock before failing."""

OFD_LOCKS = hasattr(fcntl, "F_OFD_SETLK")
"""Whether open-file-description locks are used (Linux); else :func:`fcntl.lockf`. Read at
each call, so tests can set it to ``False`` to run the fallback."""

# Pauses between polls of a taken lock: short, because a holder keeps it for milliseconds
# and a waiter that sleeps long keeps losing it to processes that come back sooner.
_FIRST_PAUSE_S = 0.0005
_MAX_PAUSE_S = 0.005

_BUSY = (errno.EAGAIN, errno.EACCES)
"""What a non-blocking lock attempt fails with when another holder has the lock."""

# struct flock as the kernel reads it: l_type, l_whence, l_start, l_len, l_pid, padded to
# the alignment of off_t. Start 0 and length 0 cover the whole file, however long.
_FLOCK = struct.Struct("@hhqqi0q")

_probed: dict[str, str | None] = {}
_probed_lock = threading.Lock()


def tree_lock_path(root: Path) -> Path:
    """The lock file of the tree at ``root`` (the file is created by the first lock, not here)."""
    tree = Path(os.path.realpath(root))
    shared = Path(os.path.realpath(workspaces_root()))
    key = tree.relative_to(shared).as_posix() if tree.is_relative_to(shared) else str(tree)
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", tree.name)[:64] or "root"
    return internal_dir() / "locks" / f"{name}-{digest}.lock"


class TreeLock:
    """The cross-process lock of the workspace tree at ``root``; see the module docstring.

    Not thread-safe and not reentrant: one owner (the tree's actor) uses it from one thread.

    Args:
        timeout_s: how long :meth:`held` waits for the lock; default :data:`LOCK_TIMEOUT_S`
            (as it is when the lock is created).
    """

    def __init__(self, root: Path, *, timeout_s: float | None = None) -> None:
        self.root = Path(os.path.realpath(root))
        self.timeout_s = LOCK_TIMEOUT_S if timeout_s is None else timeout_s
        self._path: Path | None = None
        self._fd: int | None = None
        self._holding = False

    @property
    def path(self) -> Path:
        """The lock file (see :func:`tree_lock_path`), fixed when first asked for."""
        if self._path is None:
            self._path = tree_lock_path(self.root)
        return self._path

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the tree's lock for the ``with`` block; blocks until it is free.

        The first use opens the lock file (and checks once per process that locks work
        there, see :func:`probe_tree_locks`).

        Raises:
            ToolFailed: the lock stayed taken for :attr:`timeout_s`, or locks cannot be
                taken where the lock file is; the message names the tree, never a host path.
            RuntimeError: the lock is already held by this object (a programming error).
        """
        if self._holding:
            raise RuntimeError(f"the tree lock of {self.root.name!r} is already held here: it is not reentrant")
        fd = self._fd if self._fd is not None else self._open()
        self._acquire(fd)
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
            self._release(fd)

    def close(self) -> None:
        """Close the lock file (which releases the lock if held). Idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    # -- internals ----------------------------------------------------------------------------

    def _open(self) -> int:
        path = self.path
        reason = probe_tree_locks(path.parent)
        if reason is not None:
            logger.error("workspace tree %s: %s", self.root, reason)
            raise self._unusable("they do not exclude one another there")
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            logger.error("workspace tree %s: cannot open its lock file %s: %s", self.root, path, exc)
            raise self._unusable(exc.strerror or str(exc)) from exc
        return self._fd

    def _acquire(self, fd: int) -> None:
        deadline = time.monotonic() + self.timeout_s
        pause = _FIRST_PAUSE_S
        while True:
            try:
                if _try_lock(fd):
                    return
            except OSError as exc:
                logger.error("workspace tree %s: locking %s failed: %s", self.root, self.path, exc)
                raise self._unusable(exc.strerror or str(exc)) from exc
            now = time.monotonic()
            if now >= deadline:
                raise ToolFailed(
                    f"Nothing was written: another process has kept workspace tree {self.root.name!r} locked for "
                    f"over {self.timeout_s:g} s. Try again later; if it keeps happening, tell the user that a "
                    "process working on this tree seems stuck and needs a restart."
                )
            time.sleep(min(pause, deadline - now))
            pause = min(pause * 2, _MAX_PAUSE_S)

    def _release(self, fd: int) -> None:
        try:
            _unlock(fd)
        except OSError:
            # Closing the descriptor releases the lock too; the next use opens a new one.
            logger.warning("workspace tree %s: unlocking failed; closing the lock file", self.root, exc_info=True)
            self.close()

    def _unusable(self, why: str) -> ToolFailed:
        return ToolFailed(
            f"Nothing was written: file locks do not work where workspace tree {self.root.name!r} keeps its lock "
            f"({why}), so changes from several processes could overwrite each other. Retrying will not help: an "
            "operator must put the workspaces root on a local disk or an NFSv4/SMB share with locking."
        )


def probe_tree_locks(directory: Path | None = None) -> str | None:
    """Check that a file lock in ``directory`` keeps out a second holder.

    ``directory`` defaults to where tree locks are kept (``internal_dir()/"locks"``, on the
    workspaces root's volume); it is created if missing. With OFD locks the probe locks a
    scratch file through one descriptor and tries again through a second; with the
    :func:`fcntl.lockf` fallback the second try is made by a short child process (far slower).
    The result is cached per directory per process.

    Returns:
        ``None`` when locks work, else one line for the operator: where, on which file
        system, why, and what to do.
    """
    given = str(directory if directory is not None else internal_dir(create=False) / "locks")
    with _probed_lock:
        if given not in _probed:  # resolved at the first probe only: every bind asks
            where = os.path.realpath(given)
            if where not in _probed:
                _probed[where] = _probe(Path(where))
            _probed[given] = _probed[where]
        return _probed[given]


def _probe(directory: Path) -> str | None:
    fs_type, options = _file_system(directory)

    def fails(why: str) -> str:
        return (
            f"file locks do not work on {directory} ({fs_type}: {why}): several processes cannot share this "
            "workspaces root; put it on a local disk or an NFSv4/SMB share with locking"
        )

    if fs_type.startswith("nfs") and ({"nolock", "local_lock=all", "local_lock=posix"} & set(options)):
        return fails("mounted with locks local to this host")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return fails(f"cannot create the directory: {exc.strerror or exc}")
    # A file of its own, so probes of several processes starting at once do not meet.
    scratch = directory / f"probe-{os.getpid()}-{secrets.token_hex(4)}.lock"
    try:
        why = _second_holder_admitted(scratch)
    except OSError as exc:
        why = f"locking fails: {exc.strerror or exc}"
    finally:
        with contextlib.suppress(OSError):
            scratch.unlink()
    return None if why is None else fails(why)


def _second_holder_admitted(scratch: Path) -> str | None:
    """Lock ``scratch`` and try again as another holder: ``None`` if refused, else why not."""
    first = os.open(scratch, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        if not _try_lock(first):
            return "a new file was reported locked"
        if OFD_LOCKS:
            second = os.open(scratch, os.O_RDWR | os.O_CLOEXEC)
            try:
                admitted = _try_lock(second)
            finally:
                os.close(second)
            return "a second lock was granted while the first was held" if admitted else None
        return _second_process_admitted(scratch)
    finally:
        os.close(first)


def _second_process_admitted(scratch: Path) -> str | None:
    # Classic POSIX locks never conflict within a process: only another process can tell.
    code = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n"
        "    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "except OSError as exc:\n"
        "    print(exc.errno)\n"
        "else:\n"
        "    print('granted')\n"
    )
    # Imported here: only this fallback spawns anything.
    import subprocess

    try:
        run = subprocess.run(
            [sys.executable, "-I", "-c", code, str(scratch)], check=False, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the check in a child process could not run: {exc}"
    answer = run.stdout.strip()
    if answer == "granted":
        return "another process was granted the lock while this one held it"
    if answer.isdigit() and int(answer) in _BUSY:
        return None
    detail = os.strerror(int(answer)) if answer.isdigit() else (run.stderr.strip().splitlines() or ["no answer"])[-1]
    return f"another process could not try the lock: {detail}"


def _try_lock(fd: int) -> bool:
    """Take an exclusive lock on the whole file without waiting: ``False`` if another holds it.

    Raises:
        OSError: the file system cannot lock the file.
    """
    try:
        if OFD_LOCKS:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        else:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in _BUSY:
            return False
        raise
    return True


def _unlock(fd: int) -> None:
    if OFD_LOCKS:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK.pack(fcntl.F_UNLCK, os.SEEK_SET, 0, 0, 0))
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)


def _file_system(directory: Path) -> tuple[str, list[str]]:
    """The type and mount options of the file system holding ``directory`` (Linux; else unknown)."""
    best = ""
    found: tuple[str, list[str]] = ("unknown file system", [])
    try:
        mounts = Path("/proc/self/mounts").read_text()
    except OSError:
        return found
    where = str(directory)
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        # Mount points escape spaces and the like as octal (\040).
        point = re.sub(r"\\([0-7]{3})", lambda match: chr(int(match[1], 8)), fields[1])
        inside = where == point or where.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, found = point, (fields[2], fields[3].split(","))
    return found
