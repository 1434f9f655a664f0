"""Outputs over a tool's budget, kept whole as files of the workspace: ``.toolcards/spill/``.

The pipeline (:mod:`toolcards.core._spill`) hands an output longer than its tool's budget to
the tree's :class:`SpillFolder` through the team's
:data:`~toolcards.core._services.SPILL_TO_WORKSPACE` service (:class:`MemberSpillFolders`:
each member's outputs go to its own card's tree); the model gets the head, the tail, the path
and the calls that read on. Names, retention and behaviour are described in
``docs/cards/workspace.md``.

**Containment.** Both ``.toolcards`` and ``spill`` are opened by handle without following
links: a link or a file in their place makes the spill fail (the output is then cut, its notice
saying why), so neither a write nor the retention's deletions can be led elsewhere. A
``.toolcards`` made here gets a ``.gitignore`` of ``*``, keeping spills out of ``git add -A``.

**Writing.** The text is encoded a MiB of characters at a time into a temporary renamed into
place (:func:`~toolcards.fs._atomic_write.atomic_write_at`): readers never see a partial file.
It is not flushed, a spill being a disposable copy of an answer. NUL is saved as U+FFFD and an
unpaired surrogate as ``?``, so the file stays text. A spill counts against the disk quota.
Each process sweeps the folder at its first spill, then at most once a minute or after
spilling a quarter of ``spill_mb``, so the folder may briefly hold more than ``spill_mb``.

Everything here blocks on disk I/O; the folder's sweep state is guarded by a lock.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from toolcards.errors import RetriableError, ToolFailed
from toolcards.fs._atomic_write import atomic_write_at
from toolcards.fs._tree_usage import MIB, workspace_usage
from toolcards.workspace._actor import workspace_hub
from toolcards.workspace._own_dir import open_own_directory
from toolcards.workspace._paths import OWN_DIR
from toolcards.workspace._tree import format_size

__all__ = [
    "DEFAULT_SPILL_HOURS",
    "DEFAULT_SPILL_MB",
    "SPILL_DIR",
    "SWEEP_INTERVAL_S",
    "MemberSpillFolders",
    "SpillFolder",
    "is_spill_path",
    "spill_folder",
    "spill_gone",
    "spill_name",
]

_SPILL_FOLDER = "spill"
SPILL_DIR = f"{OWN_DIR}/{_SPILL_FOLDER}"
"""Where spilled outputs are kept, relative to the tree's root."""

DEFAULT_SPILL_MB = 128
"""MB of spilled outputs a workspace keeps at most by default (``WorkspaceTool.spill_mb``)."""

DEFAULT_SPILL_HOURS = 24.0
"""Hours a spilled output is kept at most by default (``WorkspaceTool.spill_hours``)."""

SWEEP_INTERVAL_S = 60.0
"""A process sweeps a spill folder at most this often, unless it spilled a quarter of its
size limit since."""

_CHUNK_CHARS = 1024 * 1024
_SPILLED = re.compile(r"\d{8}T\d{6}Z-[A-Za-z0-9_-]+\.txt")
"""The names :func:`spill_name` makes: the only files a sweep deletes."""
_LEFTOVER = re.compile(r"\.\d{8}T\d{6}Z-[A-Za-z0-9_-]+\.txt\.[0-9a-f]+\.tmp")
"""The temporary of a spill whose process died while writing it."""
_LEFTOVER_AGE_S = 3600.0
_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
_MAX_SWEEP_ENTRIES = 100_000


def spill_name(tool: str, call_id: str) -> str:
    """A file name for the output of a call of ``tool``, unique across calls and processes."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    safe_tool = _SAFE.sub("", tool)[:64] or "tool"
    call = call_id.removeprefix(f"{tool}-")
    safe_call = _SAFE.sub("", call)[-32:] or "call"
    return f"{stamp}-{safe_tool}-{safe_call}-{secrets.token_hex(6)}.txt"


def is_spill_path(path: str) -> bool:
    """Whether ``path`` (as a model gives it) names something in :data:`SPILL_DIR`."""
    return PurePosixPath(path).parts[:2] == (".toolcards", "spill")


def spill_gone(path: str, hours: float) -> RetriableError:
    """The answer for a spilled output that is no longer kept."""
    return RetriableError(
        f"{path!r} is no longer kept: spilled outputs are kept for up to {_hours(hours)}, and the oldest "
        "are deleted first when the folder is full. Make the call that produced it again."
    )


class SpillFolder:
    """The spill folder of one workspace tree in this process: a
    :class:`~toolcards.core._spill.SpillSink` whose outputs ``workspace_read`` reads back.

    Get it with :func:`spill_folder`. Thread-safe; calling it blocks on the write (and, now
    and then, on a sweep of the folder).
    """

    reader = "workspace_read"

    def __init__(self, root: Path) -> None:
        self.root = root
        """The tree's resolved root."""
        self._lock = threading.Lock()
        self._max_mb = DEFAULT_SPILL_MB
        self._max_hours = DEFAULT_SPILL_HOURS
        self._configured = False
        self._last_sweep = float("-inf")
        self._since_sweep = 0

    @property
    def max_bytes(self) -> int:
        """Bytes of spilled outputs kept at most."""
        return self._max_mb * MIB

    @property
    def max_hours(self) -> float:
        """Hours a spilled output is kept at most."""
        return self._max_hours

    def keep(self, max_mb: int, max_hours: float) -> None:
        """Apply a card's retention: the smallest of the cards' settings applies."""
        with self._lock:
            if self._configured:
                max_mb, max_hours = min(max_mb, self._max_mb), min(max_hours, self._max_hours)
            self._max_mb, self._max_hours, self._configured = max_mb, max_hours, True

    def __call__(
        self, text: str, *, tool: str, call_id: str, agent: str | None = None, from_line: int, from_char: int
    ) -> str:
        """Keep ``text`` as a new file of the folder; return the sentences saying where and how
        to read it on from line ``from_line``.

        Raises:
            ToolFailed: it is larger than the folder keeps, the disk quota would be passed, or
                ``.toolcards/spill`` is not a plain directory of the tree.
            OSError: the file could not be written (no space left, a read-only file system...).
        """
        size = len(text) if text.isascii() else sum(len(piece) for piece in _encoded(text))
        if size > self.max_bytes:
            raise ToolFailed(
                f"it is {format_size(size)}, more than the {self._max_mb:,} MB the workspace keeps of spilled outputs"
            )
        name = spill_name(tool, call_id)
        directory = _open_spill_directory(self.root)
        try:
            self._make_room(directory, size)
            atomic_write_at(directory, name, _Pieces(_encoded(text)), sync_data=False)
        finally:
            os.close(directory)
        path = f"{SPILL_DIR}/{name}"
        return (
            f"It is saved whole in the workspace as {path!r}, kept for up to {_hours(self._max_hours)}. "
            f"Read on with workspace_read(path={path!r}, offset={from_line}). "
            f"Search it with workspace_grep(pattern=<regex>, path={path!r})."
        )

    def sweep(self, incoming: int = 0) -> None:
        """Delete expired spills, then the oldest until ``incoming`` more bytes fit the size limit.

        Raises:
            ToolFailed / OSError: as :meth:`__call__`, for the folder itself.
        """
        directory = _open_spill_directory(self.root)
        try:
            self._sweep(directory, incoming)
        finally:
            os.close(directory)

    def _make_room(self, directory: int, size: int) -> None:
        """Sweep when due; refuse a spill that would pass the tree's disk quota."""
        with self._lock:
            due = (
                time.monotonic() - self._last_sweep >= SWEEP_INTERVAL_S
                or self._since_sweep + size > self.max_bytes // 4
            )
            self._since_sweep += size
        if due:
            self._sweep(directory, size)
        quota_mb = workspace_hub(self.root, resolved=True).quota_mb
        if quota_mb is None:
            return
        usage, quota = workspace_usage(self.root), quota_mb * MIB
        if usage.estimate() + size <= quota:
            return
        if not due:
            self._sweep(directory, size)
        if usage.measure() + size > quota:
            raise ToolFailed(f"the workspace's disk quota ({quota_mb:,} MB) is reached")

    def _sweep(self, directory: int, incoming: int) -> None:
        with self._lock:
            self._last_sweep, self._since_sweep = time.monotonic(), 0
            max_bytes, max_age_s = self.max_bytes, self._max_hours * 3600
        now = time.time()
        kept: list[tuple[float, str, int]] = []
        with os.scandir(directory) as scan:
            for index, entry in enumerate(scan):
                if index >= _MAX_SWEEP_ENTRIES:
                    break
                spilled = _SPILLED.fullmatch(entry.name) is not None
                if not spilled and _LEFTOVER.fullmatch(entry.name) is None:
                    continue
                try:
                    status = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISREG(status.st_mode):
                    continue
                age = now - status.st_mtime
                if age > (max_age_s if spilled else max(max_age_s, _LEFTOVER_AGE_S)):
                    _delete(directory, entry.name)
                elif spilled:
                    kept.append((status.st_mtime, entry.name, status.st_size))
        kept.sort()
        total = sum(size for _, _, size in kept)
        for _, name, size in kept:
            if total + incoming <= max_bytes:
                break
            _delete(directory, name)
            total -= size


class MemberSpillFolders:
    """The team's :data:`~toolcards.core._services.SPILL_TO_WORKSPACE` service in one process:
    each member's outputs go to the folder of the tree its own workspace card reads (members
    of one team may work on different trees), and those of a member without one to the first
    tree bound. Thread-safe."""

    reader = "workspace_read"

    def __init__(self) -> None:
        self._folders: dict[str | None, SpillFolder] = {}

    def add(self, member: str, folder: SpillFolder) -> None:
        """Send ``member``'s outputs (its handle, ``@Alice``) to ``folder``."""
        self._folders.setdefault(None, folder)
        self._folders[member] = folder

    def __call__(self, text: str, *, tool: str, call_id: str, agent: str | None, from_line: int, from_char: int) -> str:
        """Keep ``text`` in ``agent``'s folder (see :meth:`SpillFolder.__call__`)."""
        folder = self._folders.get(agent) or self._folders[None]
        return folder(text, tool=tool, call_id=call_id, from_line=from_line, from_char=from_char)


_folders: dict[str, SpillFolder] = {}
_folders_lock = threading.Lock()


def spill_folder(root: Path) -> SpillFolder:
    """The :class:`SpillFolder` of the tree at ``root`` (resolved, as a card's root is), made
    on first use; one per tree and process."""
    key = str(root)
    folder = _folders.get(key)
    if folder is not None:
        return folder
    with _folders_lock:
        folder = _folders.get(key)
        if folder is None:
            folder = _folders[key] = SpillFolder(root)
        return folder


class _Pieces:
    """Encoded text as a stream :func:`~toolcards.fs._atomic_write.atomic_write_at` reads."""

    def __init__(self, pieces: Iterator[bytes]) -> None:
        self._pieces = pieces

    def read(self, size: int, /) -> bytes:
        return next(self._pieces, b"")


def _encoded(text: str) -> Iterator[bytes]:
    """``text`` as UTF-8, :data:`_CHUNK_CHARS` characters at a time; NUL as U+FFFD, an
    unpaired surrogate as ``?``."""
    for start in range(0, len(text), _CHUNK_CHARS):
        piece = text[start : start + _CHUNK_CHARS]
        if "\x00" in piece:
            piece = piece.replace("\x00", "\ufffd")
        yield piece.encode("utf-8", "replace")


def _open_spill_directory(root: Path) -> int:
    """A descriptor of ``root/.toolcards/spill``, each directory made when missing and
    opened without following a link.

    Raises:
        ToolFailed: a link or a file is where a directory should be.
        OSError: the root cannot be opened, or a directory cannot be made.
    """
    try:
        return open_own_directory(root, _SPILL_FOLDER)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ToolFailed(
                f"{SPILL_DIR!r} is not a plain directory of the workspace (a link or a file is in its way)"
            ) from exc
        raise


def _delete(directory: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=directory)


def _hours(hours: float) -> str:
    return f"{hours:g} hour{'' if hours == 1 else 's'}"
