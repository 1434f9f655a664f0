"""Where skills come from, and how edits reach a running agent without a restart.

A card's skills come from its sources, in order: each configured path (a skill's folder, or a
folder of skill folders), then the folders installed packages offer under the entry point
group :data:`ENTRY_POINT_GROUP`::

    [project.entry-points."toolcards.skills"]
    acme = "acme_skills"            # the folder of the package acme_skills holds skill folders
    acme-extra = "acme_skills.paths:EXTRA"   # an attribute: a path, or a function returning one

:class:`SkillLibrary` reads them all when the card is bound, and refuses (one
:class:`~toolcards.errors.WiringError` listing every problem, each with its file and line) a
``SKILL.md`` that is not a valid skill or two skills of one name. Afterwards each
:meth:`SkillLibrary.current` (before every menu render and every use) costs one ``stat`` per
source and per folder in it: a changed ``SKILL.md`` is read again, a folder added or removed
is seen, and the same tuple comes back while nothing changed. A skill edited into an invalid
one keeps its last valid version, with one warning in the log; one that never was valid is left
out (:meth:`SkillLibrary.left_out` says which, and why).

Only a regular file is read as a ``SKILL.md``. A named pipe, a socket or a device of that name
(or a symlink to one, such as ``/dev/stdin``) is refused from its ``stat`` before anything opens
it, and the open itself never waits (``O_NONBLOCK``), its handle judged again: a read that
blocked would hold the library's lock, and with it every menu render and every use, forever.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolcards.errors import WiringError
from toolcards.skills._files import file_kind
from toolcards.skills._models import SKILL_FILE, Skill, SkillFile, SkillProblem, parse_skills, split_skill_file

__all__ = [
    "ENTRY_POINT_GROUP",
    "MAX_SKILL_BYTES",
    "SkillLibrary",
    "SkillSource",
    "forget_installed_skills",
    "installed_sources",
]

logger = logging.getLogger("toolcards.skills")

ENTRY_POINT_GROUP = "toolcards.skills"
"""The entry point group through which installed packages offer skill folders."""
MAX_SKILL_BYTES = 1024 * 1024
"""A ``SKILL.md`` larger than this (1 MiB) is not a skill."""
_PARSED_CACHE_MAX = 4096

Stamp = tuple[int, int, int, int]
"""What says a file changed: its modification time (ns), size, inode and mode (which also says
what kind of file it is)."""
_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


@dataclass(frozen=True, kw_only=True)
class SkillSource:
    """A folder skills are read from, and where it was named (for messages)."""

    path: Path
    """A skill's folder, or a folder of skill folders."""
    origin: str
    """``"paths[0]"``, or ``"entry point acme (acme-skills)"``."""


_installed_lock = threading.Lock()
_installed: list[SkillSource] | None = None
_parsed_lock = threading.Lock()
_parsed: dict[tuple[str, Stamp], Skill] = {}
"""Skills parsed in this process, by file and stamp: a second bind of the same files reads none."""


def installed_sources() -> list[SkillSource]:
    """The folders installed packages offer (entry point group :data:`ENTRY_POINT_GROUP`),
    sorted by entry point name; read once per process (:func:`forget_installed_skills` reads again).

    Raises:
        WiringError: an entry point names nothing importable, or something that is not a folder.
    """
    global _installed
    with _installed_lock:
        if _installed is None:
            _installed = _read_entry_points()
        return list(_installed)


def forget_installed_skills() -> None:
    """Read the installed packages' skill folders again at the next bind (after installing one)."""
    global _installed
    with _installed_lock:
        _installed = None


def _read_entry_points() -> list[SkillSource]:
    from importlib.metadata import entry_points

    sources: list[SkillSource] = []
    problems: list[str] = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        dist = getattr(point, "dist", None)
        origin = f"entry point {point.name}" + (f" ({dist.name})" if dist is not None else "")
        try:
            path = _entry_point_folder(point.value)
        except Exception as exc:
            problems.append(f"{origin} = {point.value!r}: {exc}")
            continue
        if not path.is_dir():
            problems.append(f"{origin} = {point.value!r} is not a folder: {path}")
            continue
        sources.append(SkillSource(path=path, origin=origin))
    if problems:
        raise WiringError(f"Installed skills ({ENTRY_POINT_GROUP}): " + "; ".join(problems))
    return sources


def _entry_point_folder(value: str) -> Path:
    module, _, attr = value.partition(":")
    if not attr:
        spec = importlib.util.find_spec(module.strip())
        if spec is None:
            raise ValueError("no such module")
        if spec.submodule_search_locations:
            return Path(next(iter(spec.submodule_search_locations))).resolve()
        if spec.origin is None:
            raise ValueError("it has no folder")
        return Path(spec.origin).resolve().parent
    target: Any = importlib.import_module(module.strip())
    for part in attr.strip().split("."):
        target = getattr(target, part)
    if callable(target):
        target = target()
    return Path(os.fspath(target)).expanduser().resolve()


class SkillLibrary:
    """The skills of ``sources``, kept current at the cost of a few ``stat`` calls (module docstring).

    Thread-safe.
    """

    def __init__(self, sources: Sequence[SkillSource]) -> None:
        self.sources = tuple(sources)
        self._lock = threading.Lock()
        self._source_stamps: dict[Path, Stamp | None] = {}
        self._folders: dict[Path, list[tuple[Path, str]]] = {}
        """Source → each folder in it that may hold a skill, and its ``SKILL.md`` (those without
        one are watched too: one may appear)."""
        self._order: list[tuple[Path, str]] = []
        """Every watched folder and its ``SKILL.md``, sources in order, each once."""
        self._files: dict[str, tuple[Stamp | None, Skill | None]] = {}
        """A ``SKILL.md`` → its stamp when read and the skill it held (``None``: none valid)."""
        self._problems: dict[str, SkillProblem] = {}
        """A ``SKILL.md`` → what was wrong with it when last read, while it is not valid."""
        self._warned: set[tuple[str, Stamp | None]] = set()
        self._skills: tuple[Skill, ...] = ()
        self._by_name: dict[str, Skill] = {}
        self._left_out: tuple[tuple[str, SkillProblem], ...] = ()

    def load(self) -> tuple[Skill, ...]:
        """Read every source; the skills, sorted by name.

        Raises:
            WiringError: listing every ``SKILL.md`` that is not a valid skill (file and line),
                every name two skills share, and every source that is not a folder.
        """
        problems: list[str] = []
        with self._lock:
            for source in self.sources:
                if not source.path.is_dir():
                    problems.append(f"{source.origin}: {source.path} is not a folder")
                    continue
                self._scan_source(source.path)
            stamps = {path: _stamp(path) for _, path in self._order}
            read = _read_all([(folder, path, stamp) for folder, path in self._order if (stamp := stamps[path])])
            for _, path in self._order:
                found = read.get(path)
                if isinstance(found, SkillProblem):
                    problems.append(str(found))
                    self._problems[path] = found
                    found = None
                self._files[path] = (stamps[path], found)
            problems += self._publish(strict=True)
        if problems:
            raise WiringError("SkillsTool: " + "; ".join(problems) + ". Fix the SKILL.md files named above.")
        return self._skills

    def current(self) -> tuple[Skill, ...]:
        """The skills as the files are now: the same tuple object while nothing changed."""
        with self._lock:
            changed = False
            for source in self.sources:
                if _stamp(str(source.path)) != self._source_stamps.get(source.path):
                    self._scan_source(source.path)
                    changed = True
            for folder, path in self._order:
                stamp = _stamp(path)
                known = self._files.get(path)
                if known is not None and known[0] == stamp:
                    continue
                changed = True
                previous = known[1] if known is not None else None
                self._files[path] = (stamp, self._reread(folder, path, stamp, previous))
            if changed:
                self._publish(strict=False)
            return self._skills

    def get(self, name: str) -> Skill | None:
        """The skill called ``name`` as last read (call :meth:`current` first to see edits)."""
        return self._by_name.get(name)

    def left_out(self) -> tuple[tuple[str, SkillProblem], ...]:
        """The folders whose ``SKILL.md`` holds no valid skill, as last read (call :meth:`current`
        first): each folder's name and what is wrong, sorted by name; the same tuple while
        nothing changed. A skill edited into an invalid one is not here: its last valid
        version stays in use. Empty after a :meth:`load` that succeeded."""
        return self._left_out

    # -- internals -------------------------------------------------------------------------

    def _scan_source(self, source: Path) -> None:
        self._source_stamps[source] = _stamp(str(source))
        # Whatever is called SKILL.md makes the source one skill's folder: one that is not a
        # regular file is then refused by name, rather than the source read as a folder of them.
        if os.path.exists(source / SKILL_FILE):
            self._folders[source] = [(source, str(source / SKILL_FILE))]
        else:
            try:
                entries = sorted(os.scandir(source), key=lambda entry: entry.name)
            except OSError:
                entries = []
            self._folders[source] = [
                (Path(entry.path), os.path.join(entry.path, SKILL_FILE))
                for entry in entries
                if not entry.name.startswith(".") and entry.is_dir()
            ]
        seen: set[str] = set()
        self._order = []
        for known in self.sources:
            for folder, path in self._folders.get(known.path, ()):
                if path not in seen:
                    seen.add(path)
                    self._order.append((folder, path))
        for gone in set(self._files) - seen:
            del self._files[gone]
            self._problems.pop(gone, None)

    def _reread(self, folder: Path, path: str, stamp: Stamp | None, previous: Skill | None) -> Skill | None:
        if stamp is None:
            self._problems.pop(path, None)
            return None  # removed, or never there
        found = _read_all([(folder, path, stamp)])[path]
        if not isinstance(found, SkillProblem):
            self._problems.pop(path, None)
            return found
        self._problems[path] = found
        if (path, stamp) not in self._warned:
            self._warned.add((path, stamp))
            kept = "its last valid version stays in use" if previous is not None else "it is left out"
            logger.warning("skill %s is not valid, %s: %s", folder.name, kept, found)
        return previous

    def _publish(self, *, strict: bool) -> list[str]:
        """Order the skills by name; two of one name: the first source's wins (an error when ``strict``)."""
        by_name: dict[str, Skill] = {}
        problems: list[str] = []
        for _, path in self._order:
            skill = self._files.get(path, (None, None))[1]
            if skill is None:
                continue
            other = by_name.get(skill.name)
            if other is None:
                by_name[skill.name] = skill
            elif other.folder != skill.folder:
                message = f"two skills are called {skill.name!r}: {other.folder / SKILL_FILE} and {path}"
                if strict:
                    problems.append(message)
                elif (path, None) not in self._warned:
                    self._warned.add((path, None))
                    logger.warning("%s; the first is used", message)
        self._by_name = by_name
        self._skills = tuple(by_name[name] for name in sorted(by_name))
        left_out = sorted(
            (folder.name, self._problems[path])
            for folder, path in self._order
            if path in self._problems
            and self._files.get(path, (None, None))[1] is None
            and folder.name not in by_name  # a valid skill of that name, from another source, is served
        )
        self._left_out = tuple(left_out)
        return problems


def _stamp(path: str) -> Stamp | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino, info.st_mode)


def _read_all(files: Sequence[tuple[Path, str, Stamp]]) -> dict[str, Skill | SkillProblem]:
    """Each ``SKILL.md`` (folder, path, stamp) as its skill or its problem; parsed once per stamp per process."""
    found: dict[str, Skill | SkillProblem] = {}
    fresh: list[SkillFile] = []
    stamps: dict[str, Stamp] = {}
    for folder, path, stamp in files:
        with _parsed_lock:
            cached = _parsed.get((path, stamp))
        if cached is not None:
            found[path] = cached
            continue
        try:
            fresh.append(split_skill_file(Path(path), _read_text(path, stamp), folder=folder))
            stamps[path] = stamp
        except SkillProblem as problem:
            found[path] = problem
    for file, result in zip(fresh, parse_skills(fresh), strict=True):
        key = str(file.path)
        found[key] = result
        if isinstance(result, Skill):
            with _parsed_lock:
                if len(_parsed) >= _PARSED_CACHE_MAX:
                    _parsed.clear()
                _parsed[(key, stamps[key])] = result
    return found


def _read_text(path: str, stamp: Stamp) -> str:
    """The text of the ``SKILL.md`` at ``path`` (whose ``stat`` gave ``stamp``); never blocks.

    Raises:
        SkillProblem: it is not a regular file, is over :data:`MAX_SKILL_BYTES`, is not UTF-8
            text, or cannot be read.
    """
    if not stat.S_ISREG(stamp[3]):
        raise _not_regular(path, stamp[3])
    if stamp[1] > MAX_SKILL_BYTES:
        raise SkillProblem(Path(path), 1, f"has {stamp[1]:,} bytes; a SKILL.md has at most {MAX_SKILL_BYTES:,}")
    try:
        fd = os.open(path, _OPEN)
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):  # swapped for another kind of file since the stat
                raise _not_regular(path, mode)
            chunks: list[bytes] = []
            size = 0
            while size <= MAX_SKILL_BYTES:
                chunk = os.read(fd, MAX_SKILL_BYTES + 1 - size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        finally:
            os.close(fd)
    except OSError as exc:
        raise SkillProblem(Path(path), 1, f"cannot be read: {exc.strerror}") from None
    if size > MAX_SKILL_BYTES:
        raise SkillProblem(
            Path(path), 1, f"grew past {MAX_SKILL_BYTES:,} bytes while read; a SKILL.md has at most that"
        )
    data = b"".join(chunks)
    try:
        return data.decode("utf-8-sig").replace("\r\n", "\n")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SkillProblem(Path(path), line, "is not UTF-8 text") from None


def _not_regular(path: str, mode: int) -> SkillProblem:
    return SkillProblem(Path(path), 1, f"is {file_kind(mode)}; a SKILL.md must be a regular file")
