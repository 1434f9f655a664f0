"""An incremental trigram index of a workspace tree, which narrows ``workspace_grep``.

For every file a grep would search (:func:`~toolcards.workspace._watch.stat_walk`) it holds the
``stat`` and a kind: *text* (trigrams indexed, :mod:`toolcards.workspace._trigrams`), *binary*
(grep skips it) or *open* (text unknown, so every search looks at it: files over
:data:`MAX_INDEXED_BYTES`, unreadable, changed while read, changed within :data:`RACY_S` of
being read, or ignored by the tree's ignore files, which never hide a file from grep).

One index per tree and process (:func:`workspace_index`), in memory, built in the background
and rebuilt when found inconsistent; the reasons are in ``docs/architecture.md``. The workspace
actor's writes update it at once (:meth:`WorkspaceIndex.note_written`); outside changes are
found at the next search by inotify (:class:`~toolcards.workspace._watch.TreeWatch`) or a
``stat`` walk, so a search sees every change made before it began; a changed ignore file
refiles every entry under the new rules then, without waiting for a build.
:meth:`WorkspaceIndex.candidates` keeps the text files holding the pattern's required trigrams
(:func:`toolcards.workspace._literals.analyse`) plus the open ones, which cannot change the
answer; until :attr:`WorkspaceIndex.ready` the caller searches the whole tree.

Thread-safe: one lock guards the tables.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from toolcards.workspace._glob import open_beneath
from toolcards.workspace._ignore_rules import IgnoreRules, read_small_text
from toolcards.workspace._literals import Query, text_properties
from toolcards.workspace._searched_text import text_as_searched
from toolcards.workspace._trigrams import Postings, PostingsBuilder, codes_of_texts, index_bytes, set_bits, trigram_set
from toolcards.workspace._watch import FileStat, TreeWatch, inotify_available, stat_walk

__all__ = [
    "MAX_INDEXED_BYTES",
    "RACY_S",
    "Candidates",
    "IndexStatus",
    "WorkspaceIndex",
    "drop_workspace_indexes",
    "workspace_index",
]

_log = logging.getLogger(__name__)

MAX_INDEXED_BYTES = 8 * 1024 * 1024
"""A larger file is not indexed (it stays open: every search reads it)."""

RACY_S = 2.0
"""A file modified less than this long before it was read stays open until read again:
two changes within one tick of the file system's clock (up to 2 s on some) leave the same
``stat``."""

_REINDEX_AT_ONCE = 128
"""Up to this many changed files are read again during a search; more are left open to
every search while a background build reads them."""

_BATCH_FILES = 256
"""Files read between two looks at the lock and the progress during a build."""

_REBUILD_FRESH_FRACTION = 8
"""When more than one file in this many was indexed again since the last build, the
next refresh builds the postings again in the background."""

_TEXT, _BINARY, _OPEN = 0, 1, 2
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass(slots=True)
class _Entry:
    """What the index knows of one file."""

    stat: FileStat | None
    """The ``stat`` its kind was found with (None: read it again at the next refresh)."""
    kind: int
    number: int = -1
    """Its number in the built postings, or -1 (its codes are in ``fresh`` instead)."""
    ascii: bool = False
    irregular: bool = False
    """Its text has a lone ``\\r`` or a U+FFFD."""
    long_line: bool = False
    ignored: bool = False
    """Left out by the tree's ignore files."""
    racy: bool = False
    """Modified less than :data:`RACY_S` before it was read: kept open, read again later."""


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """Where an index stands."""

    ready: bool
    """The first build finished: searches use the index."""
    files_done: int
    """Files read so far by the build under way (or in the index when ready)."""
    files_total: int
    """Files the build under way found to read (or in the index when ready)."""
    text_bytes: int
    """Bytes of text indexed."""
    index_bytes: int
    """Bytes the postings take."""


@dataclass(frozen=True, slots=True)
class Candidates:
    """Files a search must look at, and which of them Python's ``re`` may confirm."""

    files: list[str]
    """Root-relative paths, sorted."""
    simple: frozenset[str]
    """Those whose text is ASCII (U+001C–U+001F excepted: see
    :attr:`~toolcards.workspace._literals.TextProperties.ascii_text`), without a lone ``\\r`` or
    U+FFFD, and without very long lines."""
    plain: frozenset[str]
    """Those without a lone ``\\r``, U+FFFD or very long line (non-ASCII text allowed)."""
    unsure: frozenset[str]
    """Those changed too recently for the index to know their text (read them to decide)."""


class _Built:
    """One build's postings and the files they number."""

    __slots__ = ("numbers", "postings")

    def __init__(self, postings: Postings, numbers: list[str]) -> None:
        self.postings = postings
        self.numbers = numbers


class WorkspaceIndex:
    """The trigram index of one tree (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.RLock()
        self._entries: dict[str, _Entry] = {}
        self._fresh: dict[str, frozenset[int]] = {}
        """Codes of text files indexed after the last build (their number is -1)."""
        self._built = _Built(Postings.empty(), [])
        self._stale = 0
        """Bits of built numbers whose file changed or went since the build."""
        self._rules = IgnoreRules({})
        self._rules_changed = False
        """An ignore file was written, created or removed since the rules were read."""
        self._racy: set[str] = set()
        self._truncated = False
        self._watch: TreeWatch | None = None
        self._ready = False
        self._building = False
        self._rewalk = True
        self._progress = (0, 0)
        self._version = 0
        self._text_bytes = 0
        self._generation = 0

    # -- state ------------------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """One more at every change of what the index holds (a listing may be reused until it moves)."""
        return self._version

    @property
    def truncated(self) -> bool:
        """The walk stopped at :data:`~toolcards.workspace._glob.MAX_WALK_DEPTH` somewhere: a
        search from below the root reaches files the index does not hold."""
        return self._truncated

    @property
    def ready(self) -> bool:
        """Whether the first build finished (searches before it search the whole tree)."""
        return self._ready

    def status(self) -> IndexStatus:
        """Where the index stands (for progress reports)."""
        with self._lock:
            if self._ready and not self._building:
                count = len(self._entries)
                return IndexStatus(True, count, count, self._text_bytes, self._built.postings.size)
            done, total = self._progress
            return IndexStatus(self._ready, done, total, self._text_bytes, self._built.postings.size)

    def ensure_started(self) -> bool:
        """Start the first build in a background thread if none ran; whether it is ready."""
        with self._lock:
            if self._ready:
                return True
            if not self._building:
                self._start_build()
            return False

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Start the build if needed and wait for it (tests, benchmarks); whether it is ready."""
        self.ensure_started()
        stop_at = None if timeout is None else time.monotonic() + timeout
        while not self._ready or self._building:
            if stop_at is not None and time.monotonic() > stop_at:
                return False
            time.sleep(0.005)
        return True

    def close(self) -> None:
        """Drop the watches; the index is empty and unready after this."""
        with self._lock:
            self._generation += 1
            if self._watch is not None:
                self._watch.close()
                self._watch = None
            self._entries.clear()
            self._fresh.clear()
            self._built = _Built(Postings.empty(), [])
            self._ready = False
            self._building = False
            self._rules_changed = False

    # -- keeping it current -----------------------------------------------------------------------

    def note_written(self, rels: Iterable[str]) -> None:
        """The workspace wrote or deleted these files (root-relative): index them now."""
        if not self._ready:
            return
        with self._lock, self._root_fd() as root_fd:
            for rel in rels:
                self._reindex(root_fd, rel)

    def note_removed_below(self, rel: str) -> None:
        """The workspace removed the directory ``rel`` (root-relative) and what it held."""
        if not self._ready:
            return
        prefix = "" if rel in ("", ".") else rel.rstrip("/") + "/"
        with self._lock:
            for found in [found for found in self._entries if found.startswith(prefix)]:
                self._forget(found)

    def refresh(self) -> None:
        """Bring the index up to the tree as it is now (see the module docstring)."""
        if not self._ready:
            return
        with self._lock, self._root_fd() as root_fd:
            watch = self._watch
            changes = watch.take() if watch is not None and watch.working else None
            if changes is None or changes.rewalk or self._rewalk:
                self._rewalk = False
                walk = stat_walk(root_fd, watch=watch if watch is not None and watch.working else None)
                self._truncated = walk.truncated
                self._apply_walk(root_fd, walk.files)
            else:
                for removed in changes.removed:
                    prefix = removed + "/"
                    for rel in [rel for rel in self._entries if rel.startswith(prefix)]:
                        self._forget(rel)
                for created in changes.created:
                    walk = stat_walk(root_fd, below=created, watch=watch)
                    self._truncated = self._truncated or walk.truncated
                    for rel in walk.files:
                        self._reindex(root_fd, rel)
                for rel in changes.paths:
                    self._reindex_if_changed(root_fd, rel)
            self._settle_racy(root_fd)
            self._apply_rules(root_fd)
            if len(self._fresh) > max(64, len(self._entries) // _REBUILD_FRESH_FRACTION) and not self._building:
                self._start_build()

    def _apply_walk(self, root_fd: int, files: dict[str, FileStat]) -> None:
        for rel in [rel for rel in self._entries if rel not in files]:
            self._forget(rel)
        changed = []
        for rel, found in files.items():
            entry = self._entries.get(rel)
            if entry is None or entry.stat != found:
                changed.append(rel)
        self._reindex_many(root_fd, changed)

    def _settle_racy(self, root_fd: int) -> None:
        now = time.time_ns()
        settled = []
        for rel in list(self._racy):
            entry = self._entries.get(rel)
            if entry is None or not entry.racy:
                self._racy.discard(rel)
            elif entry.stat is None or now - entry.stat.mtime_ns >= RACY_S * 1e9:
                settled.append(rel)
        self._reindex_many(root_fd, settled)

    def _reindex_many(self, root_fd: int, rels: list[str]) -> None:
        """Read ``rels`` again now, or, when they are many (a checkout), leave them open to
        every search and build the index again in the background (the lock is held)."""
        if len(rels) <= _REINDEX_AT_ONCE:
            for rel in rels:
                self._reindex(root_fd, rel)
            return
        for rel in rels:
            self._forget(rel)
            self._racy.discard(rel)
            self._entries[rel] = _Entry(None, _OPEN)
        if not self._building:
            self._start_build()

    def _forget(self, rel: str) -> None:
        self._version += 1
        if IgnoreRules.is_ignore_file(rel):
            self._rules_changed = True
        entry = self._entries.pop(rel, None)
        if entry is not None and entry.number >= 0:
            self._stale |= 1 << entry.number
        self._fresh.pop(rel, None)

    def _reindex_if_changed(self, root_fd: int, rel: str) -> None:
        """Read ``rel`` again unless its ``stat`` is the one the index holds (the lock is held)."""
        entry = self._entries.get(rel)
        if entry is not None and entry.stat is not None:
            try:
                found = FileStat.of(os.stat(rel, dir_fd=root_fd, follow_symlinks=False))
            except OSError:
                found = None
            if found == entry.stat:
                return
        self._reindex(root_fd, rel)

    def _reindex(self, root_fd: int, rel: str) -> None:
        """Read ``rel`` again (the lock is held) and file it under its new kind."""
        entry, codes, size = _read_entry(root_fd, rel, self._rules)
        self._forget(rel)
        self._racy.discard(rel)
        if entry is None:
            return
        self._entries[rel] = entry
        if entry.racy:
            self._racy.add(rel)
        if codes is not None:
            self._fresh[rel] = codes
            self._text_bytes += size

    def _apply_rules(self, root_fd: int) -> None:
        """Read the ignore files again if one changed, and file every entry under the new
        rules (the lock is held), so the search that follows answers by them.

        Only the ignore files are read, and each entry's path is checked against the rules,
        as a build does; the files the rules stop ignoring are read as changed files are
        (:meth:`_reindex_many`: many of them are left open while a build reads them).
        """
        if not self._rules_changed:
            return
        rules = IgnoreRules.read(
            [rel for rel in self._entries if IgnoreRules.is_ignore_file(rel)],
            lambda rel: read_small_text(root_fd, rel, lambda fd, r: open_beneath(fd, r, directory=False)),
        )
        self._rules = rules
        no_longer_ignored = []
        for rel, entry in list(self._entries.items()):
            if rules.ignores(rel) == entry.ignored:
                continue
            if entry.ignored:
                no_longer_ignored.append(rel)
            else:
                self._forget(rel)
                self._racy.discard(rel)
                self._entries[rel] = _Entry(entry.stat, _OPEN, ignored=True)
        self._reindex_many(root_fd, no_longer_ignored)
        # The rules were read from every ignore file the tree holds; filing entries anew
        # changed none of them.
        self._rules_changed = False

    # -- building ---------------------------------------------------------------------------------

    def _start_build(self) -> None:
        self._building = True
        generation = self._generation
        thread = threading.Thread(
            target=self._build, args=(generation,), name=f"workspace-index {self.root}", daemon=True
        )
        thread.start()

    def _build(self, generation: int) -> None:
        try:
            self._build_once(generation)
        except Exception:
            _log.exception("building the workspace index of %s failed", self.root)
            with self._lock:
                if generation == self._generation:
                    self._building = False

    def _build_once(self, generation: int) -> None:
        watch = self._watch
        if watch is None and inotify_available(str(self.root)):
            watch = TreeWatch()
        with self._root_fd() as root_fd:
            walk = stat_walk(root_fd, watch=watch)
            rules = IgnoreRules.read(
                walk.files,
                lambda rel: read_small_text(root_fd, rel, lambda fd, r: open_beneath(fd, r, directory=False)),
            )
            rels = sorted(walk.files)
            with self._lock:
                self._progress = (0, len(rels))
            entries: dict[str, _Entry] = {}
            builder = PostingsBuilder()
            numbers: list[str] = []
            text_bytes = 0
            for start in range(0, len(rels), _BATCH_FILES):
                if generation != self._generation:
                    return
                batch = rels[start : start + _BATCH_FILES]
                texts: list[bytes] = []
                owners: list[str] = []
                for rel in batch:
                    entry, data = _read_file(root_fd, rel, rules)
                    if entry is None:
                        continue
                    entries[rel] = entry
                    if data is not None:
                        texts.append(data)
                        owners.append(rel)
                for rel, codes in zip(owners, codes_of_texts(texts), strict=True):
                    entries[rel].number = len(numbers)
                    builder.add(len(numbers), codes)
                    numbers.append(rel)
                text_bytes += sum(len(data) for data in texts)
                with self._lock:
                    self._progress = (start + len(batch), len(rels))
            postings = builder.build(len(numbers))
        with self._lock:
            if generation != self._generation:
                if watch is not None and watch is not self._watch:
                    watch.close()
                return
            self._entries = entries
            self._version += 1
            self._racy = {rel for rel, entry in entries.items() if entry.racy}
            self._truncated = walk.truncated
            self._fresh = {}
            self._stale = 0
            self._built = _Built(postings, numbers)
            self._rules = rules
            # An ignore file that changed after the walk may have been read either way: the
            # next refresh reads the rules again.
            self._rules_changed = self._rules_changed or any(
                rel not in entries or entries[rel].stat != found
                for rel, found in walk.files.items()
                if IgnoreRules.is_ignore_file(rel)
            )
            self._watch = watch
            self._text_bytes = text_bytes
            # Changes made while the build read the tree: the next refresh walks it again.
            self._rewalk = True
            self._ready = True
            self._building = False

    @contextlib.contextmanager
    def _root_fd(self) -> Iterator[int]:
        fd = os.open(self.root, _DIRECTORY_FLAGS)
        try:
            yield fd
        finally:
            os.close(fd)

    # -- searching --------------------------------------------------------------------------------

    def candidates(self, query: Query, below: str) -> Candidates:
        """The files under ``below`` (root-relative directory, ``""`` or ``"."`` the root) that
        may hold a line satisfying ``query``; call :meth:`refresh` first."""
        prefix = "" if below in ("", ".") else below.rstrip("/") + "/"
        with self._lock:
            built = self._built
            bits = _evaluate(query, built.postings) & ~self._stale
            found = [built.numbers[number] for number in set_bits(bits)]
            found += [rel for rel, codes in self._fresh.items() if _satisfied(query, codes)]
            found += [rel for rel, entry in self._entries.items() if entry.kind == _OPEN]
            files = sorted({rel for rel in found if rel.startswith(prefix)})
            simple, plain, unsure = set(), set(), set()
            for rel in files:
                entry = self._entries.get(rel)
                if entry is not None and entry.racy:
                    unsure.add(rel)
                if entry is None or entry.kind != _TEXT or entry.irregular or entry.long_line:
                    continue
                plain.add(rel)
                if entry.ascii:
                    simple.add(rel)
        return Candidates(files, frozenset(simple), frozenset(plain), frozenset(unsure))

    def listing(self, wanted: Callable[[str, bool], bool]) -> dict[str, FileStat | None]:
        """The files not ignored for which ``wanted(rel, is_text)`` holds, with their ``stat``
        (None while it cannot be trusted: read such a file at every look); call :meth:`refresh` first."""
        with self._lock:
            return {
                rel: None if entry.racy else entry.stat
                for rel, entry in self._entries.items()
                if not entry.ignored and wanted(rel, entry.kind == _TEXT or entry.racy)
            }

    def unread(self) -> int:
        """How many files a build running in the background is left to read before
        :meth:`listing` can say whether they are text (many changed at once, or the ignore
        rules stopped ignoring many); 0 when no build runs."""
        with self._lock:
            if not self._building:
                return 0
            return sum(1 for entry in self._entries.values() if entry.stat is None and not entry.ignored)

    def check(self) -> None:
        """Check the tables fit together; drop and rebuild the index when they do not.

        Raises:
            ValueError: the index was damaged (it is being rebuilt; search the tree meanwhile).
        """
        with self._lock:
            built = self._built
            problems = []
            if built.postings.files < len(built.numbers):
                problems.append("postings cover fewer files than numbered")
            for rel, entry in self._entries.items():
                if entry.kind == _TEXT and entry.number < 0 and rel not in self._fresh:
                    problems.append(f"{rel}: text without trigrams")
                if entry.number >= len(built.numbers) or (entry.number >= 0 and built.numbers[entry.number] != rel):
                    problems.append(f"{rel}: numbered {entry.number} wrongly")
            if not problems:
                return
            self.close()
            self._start_build()
        raise ValueError("the workspace index was damaged and is being rebuilt: " + "; ".join(problems[:3]))


def _read_entry(root_fd: int, rel: str, rules: IgnoreRules) -> tuple[_Entry | None, frozenset[int] | None, int]:
    entry, data = _read_file(root_fd, rel, rules)
    if entry is None or data is None:
        return entry, None, 0
    return entry, frozenset(trigram_set(data)), len(data)


def _read_file(root_fd: int, rel: str, rules: IgnoreRules) -> tuple[_Entry | None, bytes | None]:
    """The entry of ``rel`` and, for a text file, its bytes as the index spells them.

    (None, None) when it is gone or not a regular file.
    """
    try:
        fd = open_beneath(root_fd, rel, directory=False)
    except (OSError, ValueError):
        return None, None
    try:
        before = FileStat.of(os.fstat(fd))
        if rules.ignores(rel):
            return _Entry(before, _OPEN, ignored=True), None
        if before.size > MAX_INDEXED_BYTES:
            return _Entry(before, _OPEN), None
        text = text_as_searched(fd, MAX_INDEXED_BYTES)
        after = FileStat.of(os.fstat(fd))
    except OSError:
        return _Entry(None, _OPEN), None
    finally:
        os.close(fd)
    if text is None or after != before:
        return _Entry(None, _OPEN), None  # grown past the limit, or changed while read
    if time.time_ns() - after.mtime_ns < RACY_S * 1e9:
        return _Entry(after, _OPEN, racy=True), None
    if "\x00" in text:
        return _Entry(after, _BINARY), None
    properties = text_properties(text)
    entry = _Entry(
        after, _TEXT, ascii=properties.ascii_text, irregular=properties.irregular, long_line=properties.long_line
    )
    return entry, index_bytes(text)


def _evaluate(query: Query, postings: Postings) -> int:
    """The bitmap of the built files satisfying ``query``."""
    if query.any_of:
        bits = 0
        for part in query.parts:
            bits |= _evaluate(part, postings)
        return bits
    bits = (1 << postings.files) - 1
    for code in sorted(query.trigrams, key=postings.weight):
        bits &= postings.bits(code)
        if not bits:
            return 0
    for part in query.parts:
        bits &= _evaluate(part, postings)
        if not bits:
            return 0
    return bits


def _satisfied(query: Query, codes: frozenset[int]) -> bool:
    if query.any_of:
        return any(_satisfied(part, codes) for part in query.parts)
    return query.trigrams <= codes and all(_satisfied(part, codes) for part in query.parts)


_indexes: dict[str, WorkspaceIndex] = {}
_indexes_lock = threading.Lock()


def workspace_index(root: Path, *, create: bool = True) -> WorkspaceIndex | None:
    """The index of the tree at ``root`` (its resolved path), made on first use when ``create``."""
    key = os.path.realpath(root)
    index = _indexes.get(key)
    if index is not None or not create:
        return index
    with _indexes_lock:
        index = _indexes.get(key)
        if index is None:
            index = _indexes[key] = WorkspaceIndex(Path(key))
        return index


def drop_workspace_indexes() -> None:
    """Close and forget every index of this process (tests, and when trees are removed)."""
    with _indexes_lock:
        indexes = list(_indexes.values())
        _indexes.clear()
    for index in indexes:
        index.close()
