"""The workspace journal: every change of a tree, who made it, and the bytes before and after.

Every change made through a workspace tool, by a sandboxed ``exec_command``, or any other way
(``outside``) becomes one :class:`~toolcards.workspace._models.JournalEntry` (id, member and
team, time, tool, claimed task, paths, each file's content before and after), read by
``workspace_history``, ``workspace_diff`` and ``workspace_undo``
(:mod:`toolcards.workspace._undo`). What users see is in ``docs/cards/workspace.md``.

**Where it lives: the team's store**, so every process and host serving the tree shares one
journal, in two namespaces per tree:

* ``#workspace/<id>/journal`` — the index, loaded whole: ``changes`` (key: the zero-padded
  id), ``files`` (the *baseline*: each file's status and digest as last seen), ``blobs`` (a
  catalog of stored versions), ``meta`` (the last id, what retention dropped), ``running``
  (the sandboxed commands running now, in any process) and ``#calls``
  (:class:`~toolcards.store.CallLog`);
* ``#workspace/<id>/blobs`` — the versions (:mod:`toolcards.workspace._blobs`), stored once
  per SHA-256 and read by key when a diff or an undo needs one, never loaded whole.

**How changes are noticed.** A tool records its change holding the tree's
:class:`~toolcards.workspace._tree_lock.TreeLock`, after writing and before answering: if the
journal cannot commit, the files are put back and the tool fails. Everything else is found by
a **scan** (:mod:`toolcards.workspace._scan`) against the baseline, before and after every
sandboxed command and before ``workspace_history`` and ``workspace_undo``. A file's content is
stored when the journal first sees it, so what a command is about to overwrite is already
kept. A scan's findings go to the command that just ended, else to the earliest command
running in any process, else to ``outside``.

**Exactly once.** A change carrying an idempotency key
(:func:`~toolcards.core._idempotency.current_call`) records the key and its answer in the same
transaction as its entry; a repeat, from any process, gets the first answer
(:meth:`Journal.replay`). **Retention** (:class:`JournalSettings`) drops the oldest entries
past ``max_bytes`` or ``max_age_s``, with the versions nothing else needs; a dropped id is
reported as such. Files over :data:`MAX_KEPT_BYTES` are recorded by digest alone.

**Threads.** Writes (:meth:`Journal.prepare`, :meth:`Journal.commit`, :meth:`Journal.scan`)
run on the tree's actor, holding the tree lock; reads run in any thread, a lock guarding the
in-memory index.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolcards.actors._process_liveness import machine_mark, process_gone
from toolcards.core._idempotency import CallKey
from toolcards.errors import RetriableError
from toolcards.store._base import CatchUp, Change, Snapshot, Store
from toolcards.store._calls import CALLS, CallLog
from toolcards.workspace._blobs import BlobInfo, BlobStore, EncodedBlob
from toolcards.workspace._models import DIRECTORY, FileChange, JournalEntry, content_digest
from toolcards.workspace._paths import display_name
from toolcards.workspace._scan import UNKNOWN_STATE, Scan, Stat, is_journaled, path_state, scan_tree
from toolcards.workspace._tree import Tree

__all__ = [
    "DEFAULT_MAX_AGE_DAYS",
    "DEFAULT_MAX_MB",
    "MAX_KEPT_BYTES",
    "OUTSIDE",
    "Author",
    "CallIntent",
    "ChangeContext",
    "Journal",
    "JournalSettings",
    "PathChange",
    "Prepared",
    "RunningCommand",
    "StoredEntry",
    "journal_namespaces",
    "member_filter",
]

logger = logging.getLogger(__name__)

MAX_KEPT_BYTES = 16 * 1024 * 1024
"""Files larger than this are recorded by digest alone (their content is not kept)."""

DEFAULT_MAX_MB = 256
"""Megabytes of history (beyond the tree's current content) kept per tree by default."""

DEFAULT_MAX_AGE_DAYS = 30.0
"""Days an entry is kept by default."""

OUTSIDE = "outside"
"""The tool of a change made without the workspace tools and no command running."""

_CHANGES = "changes"
_FILES = "files"
_CATALOG = "blobs"
_META = "meta"
_RUNNING = "running"
_INTENTS = "intents"
_META_KEY = "journal"
_DIRECTORY_REF = "/"
_UNKEPT = "!"
_RUNNING_GRACE_S = 60.0
"""A command registered as running is believed to run for at most its deadline and this; a
keyed change's intent (between storing its versions and its commit), for at most this."""
_LISTED_PATHS = 10
"""Paths a settled call's answer names at most."""
_HISTORY_TARGET = 0.9
"""Retention brings history down to this share of its limit, so it does not run at every change."""

Ref = str | None
"""How the index names one side of a path: a digest (content kept), ``"!" + digest`` (not
kept), ``"/"`` (a directory), ``None`` (nothing there)."""


@dataclass(frozen=True, slots=True)
class JournalSettings:
    """How much history one tree keeps (the largest of the cards attached applies)."""

    max_bytes: int = DEFAULT_MAX_MB * 1024 * 1024
    """Bytes of stored versions kept beyond those the tree's current files need."""
    max_age_s: float = DEFAULT_MAX_AGE_DAYS * 86_400
    """Seconds an entry is kept."""

    def merged(self, other: JournalSettings) -> JournalSettings:
        """The settings keeping the most of both."""
        return JournalSettings(
            max_bytes=max(self.max_bytes, other.max_bytes), max_age_s=max(self.max_age_s, other.max_age_s)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Author:
    """Who a change is recorded for."""

    member: str
    """``@Name``, or ``""`` outside the tools."""
    team: str
    """The member's team (``""`` outside the tools)."""
    task_id: int | None = None
    """The task the member holds a claim on, if any."""

    @classmethod
    def of_agent(cls, agent: str, task_id: int | None = None) -> Author:
        """The author for an agent string ``"<team>/@Name"`` (what the workspace card passes)."""
        team, _, member = agent.rpartition("/")
        return cls(member=member if member.startswith("@") else f"@{member}", team=team, task_id=task_id)

    def to_json(self) -> dict[str, Any]:
        """The author's fields of an index row (``m``, ``t``, ``task``)."""
        return {"m": self.member, "t": self.team, "task": self.task_id}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Author:
        """The author of an index row whose fields :meth:`to_json` gave."""
        task = value.get("task")
        return cls(
            member=str(value.get("m", "")),
            team=str(value.get("t", "")),
            task_id=task if isinstance(task, int) else None,
        )


def member_filter(text: str) -> str:
    """The member a filter of history or undo names, as entries record it: :data:`OUTSIDE` for
    the bare word ``outside`` (any case: the changes made without the tools), else ``@Name``
    for ``Name`` or ``@Name``. So ``@outside`` is the member called outside, whom the bare
    word cannot name."""
    stripped = text.strip()
    bare = stripped.lstrip("@").strip()
    if not stripped.startswith("@") and bare.lower() == OUTSIDE:
        return OUTSIDE
    return f"@{bare}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeContext:
    """What a workspace card tells the tree's actor about a change it asks for."""

    tool: str = ""
    """The tool the change is journaled under (default: the actor method's tool)."""
    task_id: int | None = None
    """The task the member holds a claim on, if any."""
    call: CallKey | None = None
    """The call's idempotency key, if it has one: a retry gets the first answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PathChange:
    """One path's part of a change, as the actor hands it to :meth:`Journal.prepare`.

    ``before`` and ``after`` are the content (``bytes``), a digest (``str``: kept when the
    journal holds that version, else recorded by digest alone),
    :data:`~toolcards.workspace._models.DIRECTORY`, or ``None`` (nothing there).
    """

    path: str
    before: bytes | str | None
    after: bytes | str | None
    before_mode: int | None = None
    after_mode: int | None = None
    before_digest: str | None = None
    """The digest of ``before``'s bytes, when the caller has it (it is not computed again)."""
    after_digest: str | None = None
    """The digest of ``after``'s bytes, when the caller has it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunningCommand:
    """A sandboxed command running in the tree, as registered in the index."""

    key: str
    """Its registration's key."""
    author: Author
    """Who runs it."""
    command: str
    """Its command line (the first 500 characters)."""
    started: float
    """When it started (seconds since the epoch)."""
    until: float
    """When it is believed over whatever happens (its deadline, and a grace)."""
    pid: int | None = None
    """The process that runs it (the server's; its sandbox dies with it)."""
    machine: str | None = None
    """Where ``pid`` means something (:func:`~toolcards.actors._process_liveness.machine_mark`)."""

    @property
    def over(self) -> bool:
        """Past its deadline, or its process is known to have ended (a ``kill -9``). Either
        way the next scan takes its registration away, in the write that files what that scan
        found as the command's: what changes later is not its."""
        return self.until < time.time() or process_gone(self.machine, self.pid)

    @classmethod
    def new(cls, author: Author, command: str, timeout_s: float) -> RunningCommand:
        """A registration for ``command`` starting now, with a deadline ``timeout_s`` away."""
        now = time.time()
        return cls(
            key=uuid.uuid4().hex,
            author=author,
            command=command[:500],
            started=now,
            until=now + timeout_s + _RUNNING_GRACE_S,
            pid=os.getpid(),
            machine=machine_mark(),
        )

    def to_json(self) -> dict[str, Any]:
        """The row the index keeps."""
        return {
            **self.author.to_json(),
            "cmd": self.command,
            "at": self.started,
            "until": self.until,
            "pid": self.pid,
            "machine": self.machine,
            "host": socket.gethostname(),
        }

    @classmethod
    def from_json(cls, key: str, value: Mapping[str, Any]) -> RunningCommand:
        """Read back a row :meth:`to_json` gave."""
        return cls(
            key=key,
            author=Author.from_json(value),
            command=str(value.get("cmd", "")),
            started=float(value.get("at", 0.0)),
            until=float(value.get("until", 0.0)),
            pid=pid if isinstance(pid := value.get("pid"), int) else None,
            machine=machine if isinstance(machine := value.get("machine"), str) else None,
        )


Item = tuple[str, Ref, Ref, int | None, int | None]
"""One path of an entry: ``(path, before, after, before mode, after mode)``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallIntent:
    """A keyed change about to be written, as registered in the index until its commit.

    A process killed after writing a change's files and before the commit that records its
    call leaves files no entry explains and a key no record answers: the retry would apply
    the change again. So a change carrying a call key stores this row before writing (in
    :meth:`Journal.prepare`), and :meth:`Journal.commit` removes it in its own transaction.
    A row whose writer can no longer commit (:attr:`abandoned`) is settled against the tree
    by the next replay, prepare or scan: see :meth:`Journal.settle`.
    """

    call: CallKey
    """The call's key and the digest of its arguments."""
    author: Author
    """Who makes the change (with the task claimed)."""
    tool: str
    """The tool it is journaled under."""
    items: tuple[Item, ...]
    """What it plans to write, as its entry will hold it."""
    noticed: tuple[Item, ...] = ()
    """What :meth:`Journal.prepare` found changed outside the tools first: an entry of its own."""
    blobs: Mapping[str, BlobInfo] = field(default_factory=dict)
    """The versions it stored, for the catalog."""
    until: float
    """When its writer is believed gone whatever happens (a process of another host or boot,
    whose end cannot be seen from here)."""
    pid: int | None = None
    """The process writing it."""
    machine: str | None = None
    """Where ``pid`` means something (:func:`~toolcards.actors._process_liveness.machine_mark`)."""
    host: str = ""
    """The writer's host name, to name it in a message."""

    @property
    def abandoned(self) -> bool:
        """Its writer can no longer commit it: past :attr:`until`, its process ended (a
        ``kill -9``), or it is this process's own. The last holds because intents are only
        looked at holding the tree's lock, from the tree's actor, between changes: one of its
        own still there is a change that failed before its commit. While a writer lives it
        holds the tree's lock, so no other process settles its intent early."""
        if self.until < time.time() or process_gone(self.machine, self.pid):
            return True
        return self.machine is not None and self.machine == machine_mark() and self.pid == os.getpid()

    @classmethod
    def new(cls, call: CallKey, author: Author, tool: str, prepared: Prepared) -> CallIntent:
        """The intent of writing ``prepared`` for ``call`` now, in this process."""
        return cls(
            call=call,
            author=author,
            tool=tool,
            items=tuple(prepared.items),
            noticed=tuple(prepared.noticed),
            blobs=dict(prepared.blobs),
            until=time.time() + _RUNNING_GRACE_S,
            pid=os.getpid(),
            machine=machine_mark(),
            host=socket.gethostname(),
        )

    def to_json(self) -> dict[str, Any]:
        """The row the index keeps (under the call's key)."""
        return {
            "d": self.call.digest,
            **self.author.to_json(),
            "tool": self.tool,
            "f": [list(item) for item in self.items],
            "n": [list(item) for item in self.noticed],
            "b": {digest: info.to_json() for digest, info in self.blobs.items()},
            "until": self.until,
            "pid": self.pid,
            "machine": self.machine,
            "host": self.host,
        }

    @classmethod
    def from_json(cls, key: str, value: Mapping[str, Any]) -> CallIntent:
        """Read back a row :meth:`to_json` gave."""
        return cls(
            call=CallKey(key=key, digest=str(value["d"])),
            author=Author.from_json(value),
            tool=str(value.get("tool", "")),
            items=tuple(_item(f) for f in value.get("f", ())),
            noticed=tuple(_item(f) for f in value.get("n", ())),
            blobs={str(d): BlobInfo.from_json(info) for d, info in value.get("b", {}).items()},
            until=float(value.get("until", 0.0)),
            pid=pid if isinstance(pid := value.get("pid"), int) else None,
            machine=machine if isinstance(machine := value.get("machine"), str) else None,
            host=str(value.get("host", "")),
        )


@dataclass(slots=True)
class StoredEntry:
    """An entry as the index holds it, parsed once; :meth:`public` is the
    :class:`~toolcards.workspace._models.JournalEntry` it stands for."""

    id: int
    at: float
    member: str
    team: str
    tool: str
    task_id: int | None
    files: tuple[tuple[str, Ref, Ref, int | None, int | None], ...]
    summary: str
    command: str | None
    undoes: tuple[int, ...]
    call: str | None

    @classmethod
    def from_json(cls, key: str, value: Mapping[str, Any]) -> StoredEntry:
        """Read back an index row."""
        task = value.get("task")
        return cls(
            id=int(key),
            at=float(value["at"]),
            member=str(value.get("m", "")),
            team=str(value.get("t", "")),
            tool=str(value.get("tool", "")),
            task_id=task if isinstance(task, int) else None,
            files=tuple((str(f[0]), f[1], f[2], f[3], f[4]) for f in value.get("f", ())),
            summary=str(value.get("s", "")),
            command=value.get("cmd"),
            undoes=tuple(int(u) for u in value.get("u", ())),
            call=value.get("k"),
        )

    def to_json(self) -> dict[str, Any]:
        """The index row (short keys: it is loaded by every process using the tree)."""
        value: dict[str, Any] = {
            "at": self.at,
            "m": self.member,
            "t": self.team,
            "tool": self.tool,
            "f": [list(item) for item in self.files],
            "s": self.summary,
        }
        if self.task_id is not None:
            value["task"] = self.task_id
        if self.command is not None:
            value["cmd"] = self.command
        if self.undoes:
            value["u"] = list(self.undoes)
        if self.call is not None:
            value["k"] = self.call
        return value

    @property
    def paths(self) -> list[str]:
        """The paths it changed."""
        return [item[0] for item in self.files]

    def public(self) -> JournalEntry:
        """The entry as the public model."""
        return JournalEntry(
            id=self.id,
            at=self.at,
            member=self.member,
            team=self.team,
            tool=self.tool,
            task_id=self.task_id,
            files=tuple(_file_change(item) for item in self.files),
            summary=self.summary,
            command=self.command,
            undoes=self.undoes,
        )


@dataclass(slots=True)
class Prepared:
    """A change whose versions are stored, ready for :meth:`Journal.commit`."""

    items: list[tuple[str, Ref, Ref, int | None, int | None]]
    """The entry's paths: ``(path, before, after, before mode, after mode)``."""
    noticed: list[tuple[str, Ref, Ref, int | None, int | None]]
    """Files that differed from the baseline before the change: an entry of their own."""
    blobs: dict[str, BlobInfo] = field(default_factory=dict)
    """The versions this change stored, for the catalog."""
    baseline: dict[str, Ref] = field(default_factory=dict)
    """Each path's ref after the change, for the baseline."""
    intent: str | None = None
    """The key of the :class:`CallIntent` stored for it (``None``: none), removed at commit."""


def journal_namespaces(workspace_id: str) -> tuple[str, str]:
    """The store namespaces of the journal of tree ``workspace_id``: ``(index, blobs)``."""
    return f"#workspace/{workspace_id}/journal", f"#workspace/{workspace_id}/blobs"


class Journal:
    """The journal of one tree, in one process: a cache of its index, and how changes are recorded.

    Args:
        store: the team's store.
        workspace_id: the tree's id (its directory's name).
        settings: retention.
    """

    def __init__(self, store: Store, workspace_id: str, settings: JournalSettings | None = None) -> None:
        self.store = store
        self.workspace_id = workspace_id
        self.settings = settings or JournalSettings()
        self.index_namespace, blob_namespace = journal_namespaces(workspace_id)
        self.blobs = BlobStore(store, blob_namespace)
        self._lock = threading.RLock()
        self._version = 0
        self._entries: dict[int, StoredEntry] = {}
        self._files: dict[str, tuple[Stat | None, Ref]] = {}
        self._catalog: dict[str, BlobInfo] = {}
        self._stored = 0
        self._seq = 0
        self._compacted = 0
        self._complete = False
        self._baseline_bytes = 0
        self._running: dict[str, RunningCommand] = {}
        self._intents: dict[str, CallIntent] = {}
        self._calls = CallLog()
        self._by_path: dict[str, list[int]] = {}
        self._by_member: dict[str, list[int]] = {}
        self._by_task: dict[int, list[int]] = {}
        self._indexes_stale = False
        self._loaded = False
        self._scanned_at = float("-inf")
        self._unsettled: set[str] = set()
        """Files the last scan hashed without keeping (its memory was spent): read again next time."""

    # -- the cache of the index -----------------------------------------------------------------

    def refresh(self) -> None:
        """Catch up with what every process committed (cheap when nothing did).

        Raises:
            StoreError: the store cannot be read.
        """
        with self._lock:
            catch_up: CatchUp = self.store.read(self.index_namespace, self._version if self._loaded else -1)
            self._absorb(catch_up)

    def _absorb(self, catch_up: CatchUp | None) -> None:
        if catch_up is None:
            return
        if isinstance(catch_up, Snapshot):
            self._reset()
            for collection, rows in catch_up.rows.items():
                for key, value in rows.items():
                    self._absorb_row(collection, key, value)
        else:
            for change in catch_up.changes:
                self._absorb_row(change.collection, change.key, change.value)
        self._version = catch_up.version
        self._loaded = True

    def _reset(self) -> None:
        self._entries.clear()
        self._files.clear()
        self._catalog.clear()
        self._stored = 0
        self._seq = self._compacted = 0
        self._complete = False
        self._running.clear()
        self._intents.clear()
        self._calls.clear()
        self._by_path.clear()
        self._by_member.clear()
        self._by_task.clear()
        self._indexes_stale = False

    def _absorb_row(self, collection: str, key: str, value: Any) -> None:
        try:
            if collection == _CHANGES:
                entry_id = int(key)
                if value is None:
                    if self._entries.pop(entry_id, None) is not None:
                        self._indexes_stale = True
                else:
                    entry = StoredEntry.from_json(key, value)
                    self._entries[entry.id] = entry
                    self._index(entry)
            elif collection == _FILES:
                if value is None:
                    self._files.pop(key, None)
                else:
                    stat = tuple(value[:4]) if value[0] is not None else None
                    self._files[key] = (stat, value[4])
            elif collection == _CATALOG:
                old = self._catalog.pop(key, None)
                if old is not None:
                    self._stored -= old.size
                if value is not None:
                    info = BlobInfo.from_json(value)
                    self._catalog[key] = info
                    self._stored += info.size
            elif collection == _META:
                if value is not None:
                    self._seq = int(value.get("seq", 0))
                    self._compacted = int(value.get("compacted", 0))
                    self._complete = bool(value.get("complete", False))
            elif collection in (_RUNNING, _INTENTS):
                self._absorb_registration(collection, key, value)
            elif collection == CALLS:
                self._calls.absorb(Change(collection=collection, key=key, value=value))
        except (KeyError, IndexError, TypeError, ValueError):
            logger.warning("Journal of %s: ignoring a damaged row %s/%s", self.workspace_id, collection, key)

    def _absorb_registration(self, collection: str, key: str, value: Any) -> None:
        """A running command's row or a keyed change's intent (``None``: removed)."""
        if collection == _RUNNING:
            if value is None:
                self._running.pop(key, None)
            else:
                self._running[key] = RunningCommand.from_json(key, value)
        elif value is None:
            self._intents.pop(key, None)
        else:
            self._intents[key] = CallIntent.from_json(key, value)

    def _index(self, entry: StoredEntry) -> None:
        for path in _with_ancestors(entry.paths):
            self._by_path.setdefault(path, []).append(entry.id)
        self._by_member.setdefault(entry.member, []).append(entry.id)
        if entry.task_id is not None:
            self._by_task.setdefault(entry.task_id, []).append(entry.id)

    def _rebuild_indexes(self) -> None:
        if not self._indexes_stale:
            return
        self._by_path.clear()
        self._by_member.clear()
        self._by_task.clear()
        for entry in self._entries.values():
            self._index(entry)
        self._indexes_stale = False

    # -- reading ------------------------------------------------------------------------------

    def history(
        self, *, path: str | None = None, member: str | None = None, task_id: int | None = None, limit: int = 20
    ) -> list[JournalEntry]:
        """The newest entries first, at most ``limit``, matching every filter given.

        ``path`` matches the entries that changed it or, for a directory, anything under it;
        ``member`` is ``@Name`` (``""`` or :data:`OUTSIDE` for changes made outside the tools).
        Reads what this process has absorbed: call :meth:`refresh` first for the latest.
        """
        return [entry.public() for entry in self.select(path=path, member=member, task_id=task_id, limit=limit)]

    def select(
        self,
        *,
        path: str | None = None,
        member: str | None = None,
        task_id: int | None = None,
        since_id: int | None = None,
        since_time: float | None = None,
        limit: int | None = None,
    ) -> list[StoredEntry]:
        """The entries matching every filter, newest first: ``path`` (the entries that
        changed it or something under it), ``member`` (``@Name``; ``""`` or :data:`OUTSIDE`
        for changes made outside the tools), ``task_id``, ``since_id`` (that change and
        later ones), ``since_time`` (recorded at or after it); at most ``limit``.

        Reads what this process has absorbed: call :meth:`refresh` first for the latest.
        """
        with self._lock:
            return self._select(
                path=path, member=member, task_id=task_id, since_id=since_id, since_time=since_time, limit=limit
            )

    def _select(
        self,
        *,
        path: str | None,
        member: str | None,
        task_id: int | None,
        since_id: int | None,
        since_time: float | None,
        limit: int | None,
    ) -> list[StoredEntry]:
        self._rebuild_indexes()
        if member == OUTSIDE:
            member = ""
        candidates: Iterable[int]
        whole_tree = path is not None and path.strip("/") in ("", ".")
        if path is not None and not whole_tree:
            candidates = reversed(self._by_path.get(path.strip("/"), []))
        elif member is not None:
            candidates = reversed(self._by_member.get(member, []))
        elif task_id is not None:
            candidates = reversed(self._by_task.get(task_id, []))
        else:
            candidates = reversed(self._entries)
        found: list[StoredEntry] = []
        for entry_id in candidates:
            entry = self._entries.get(entry_id)
            if entry is None:
                continue
            if since_id is not None and entry.id < since_id:
                break
            if since_time is not None and entry.at < since_time:
                break
            if member is not None and entry.member != member:
                continue
            if task_id is not None and entry.task_id != task_id:
                continue
            found.append(entry)
            if limit is not None and len(found) >= limit:
                break
        return found

    def entry(self, entry_id: int) -> StoredEntry:
        """The entry ``entry_id`` (after catching up).

        Raises:
            RetriableError: no such change (never made, or dropped by retention: the
                message says which).
        """
        self.refresh()
        with self._lock:
            found = self._entries.get(entry_id)
            if found is not None:
                return found
            raise RetriableError(self.missing_message(entry_id))

    def missing_message(self, entry_id: int) -> str:
        """Why change ``entry_id`` is not in the journal, and what to do."""
        with self._lock:
            if 0 < entry_id <= self._compacted:
                days = self.settings.max_age_s / 86_400
                return (
                    f"Change {entry_id} was dropped from the journal by its retention (it keeps "
                    f"{self.settings.max_bytes // (1024 * 1024):,} MB of history for {days:g} days), so it can no "
                    "longer be shown or undone. Call workspace_history for the changes it still holds."
                )
            last = f" (the last is {self._seq})" if self._seq else " (it is empty)"
            return f"There is no change {entry_id} in the journal{last}. Call workspace_history to list change ids."

    def later_entries(self, path: str, after_id: int, excluded: Iterable[int] = ()) -> list[StoredEntry]:
        """The entries after ``after_id`` that changed ``path`` (or, for a directory, what
        is under it), oldest first, leaving out ``excluded``."""
        skip = set(excluded)
        with self._lock:
            self._rebuild_indexes()
            ids = [i for i in self._by_path.get(path, []) if i > after_id and i not in skip]
            return [self._entries[i] for i in ids if i in self._entries]

    def contents(self, refs: Iterable[Ref]) -> dict[str, bytes]:
        """The content of each version ``refs`` name that the journal holds, by digest
        (directories, absences and versions never kept are left out; a version recorded by
        digest alone and kept since is found).

        Raises:
            StoreError: the versions cannot be read.
        """
        digests = [ref.lstrip(_UNKEPT) for ref in refs if ref and ref != _DIRECTORY_REF]
        chains: dict[str, BlobInfo] = {}
        with self._lock:
            for digest in digests:
                current: str | None = digest
                while current is not None and current not in chains:
                    info = self._catalog.get(current)
                    if info is None:
                        break
                    chains[current] = info
                    current = info.base
        return self.blobs.read(digests, chains)

    def is_kept(self, ref: Ref) -> bool:
        """Whether the content ``ref`` names can be read back."""
        with self._lock:
            return ref is not None and ref in self._catalog

    def replay(self, call: CallKey | None, tool: str, tree: Tree | None = None) -> str | None:
        """The answer recorded for ``call`` when it was applied already, after catching up.

        With ``tree``, intents left by writers that can no longer commit are settled first
        (:meth:`settle`), so a call whose process was killed between writing and recording
        gets the answer its settlement recorded. Call it holding the tree's lock.

        Raises:
            ToolFailed: the key was used with other arguments.
            RetriableError: the call's intent waits for its writer on another host or boot;
                nothing was changed.
            StoreError: the journal cannot be read (or an intent cannot be settled).
        """
        if call is None:
            return None
        self.refresh()
        if tree is not None:
            self._settle_abandoned(tree)
        with self._lock:
            answer = self._calls.replay(call, tool)
            waiting = self._intents.get(call.key) if answer is None else None
        if waiting is not None:
            seconds = max(1, round(waiting.until - time.time()))
            raise RetriableError(
                f"This {tool} call was begun by a server on {waiting.host or 'another host'} that is still writing "
                "it, or stopped where this one cannot see (another host, an earlier boot): whether it was applied "
                f"is settled within {seconds} s. Retry then with the same idempotency key; nothing was changed now."
            )
        return answer if isinstance(answer, str) else None

    @property
    def seconds_since_scan(self) -> float:
        """Seconds since this process last scanned the tree (infinite: never)."""
        return time.monotonic() - self._scanned_at

    @property
    def last_id(self) -> int:
        """The id of the newest entry recorded (0: none)."""
        with self._lock:
            return self._seq

    @property
    def history_bytes(self) -> int:
        """About how many bytes of stored versions the history takes beyond the current tree."""
        with self._lock:
            return max(0, self._stored - self._baseline_bytes)

    def running(self) -> list[RunningCommand]:
        """The commands registered as running in the tree now (in any process), oldest first."""
        now = time.time()
        with self._lock:
            return sorted((r for r in self._running.values() if r.until > now), key=lambda r: r.started)

    # -- recording a tool's change ------------------------------------------------------------

    def prepare(
        self,
        changes: Sequence[PathChange],
        *,
        tree: Tree | None = None,
        call: CallKey | None = None,
        author: Author | None = None,
        tool: str = "",
    ) -> Prepared:
        """Store the versions of ``changes`` that the journal does not hold yet.

        Call it holding the tree's lock, before writing the files. Also notices files that
        differed from the baseline (changed outside the tools since it was last seen): they
        become an entry of their own at :meth:`commit`. With ``tree``, abandoned intents
        are settled first (:meth:`settle`), so what they wrote is not taken for outside work.

        With ``call`` and ``author`` (and a path to change) it then stores the change's
        :class:`CallIntent` under the call's key, in one more write of the index: if the
        process dies before :meth:`commit`, the next replay, prepare or scan settles it. A
        change without a key writes nothing more.

        Raises:
            StoreError: the versions or the intent cannot be written (nothing is referenced yet).
        """
        self.refresh()
        if tree is not None and self._intents:
            self._settle_abandoned(tree)
        with self._lock:
            items: list[tuple[str, Ref, Ref, int | None, int | None]] = []
            noticed: list[tuple[str, Ref, Ref, int | None, int | None]] = []
            encoded: dict[str, EncodedBlob] = {}
            prepared = Prepared(items=items, noticed=noticed)
            for change in changes:
                before, before_data = self._ref(change.before, change.before_digest)
                after, after_data = self._ref(change.after, change.after_digest)
                if change.path in self._files or self._complete:
                    seen = self._files.get(change.path, (None, None))[1]
                    if not _same(seen, before) and is_journaled(change.path):
                        noticed.append((change.path, seen, before, None, change.before_mode))
                base = self._store_version(before, before_data, None, encoded)
                self._store_version(after, after_data, base, encoded)
                items.append((change.path, before, after, change.before_mode, change.after_mode))
                prepared.baseline[change.path] = after
            if encoded:
                self.blobs.write(list(encoded.values()))
            prepared.blobs = {digest: blob.info for digest, blob in encoded.items()}
            if call is not None and author is not None and items:
                intent = CallIntent.new(call, author, tool, prepared)
                with self.store.write(self.index_namespace, since=self._version) as txn:
                    self._absorb(txn.catch_up)
                    rows = [Change(collection=_INTENTS, key=call.key, value=intent.to_json())]
                    txn.stage(rows)
                self._mirror(rows, txn.committed)
                prepared.intent = call.key
            return prepared

    def _ref(self, side: bytes | str | None, digest: str | None = None) -> tuple[Ref, bytes | None]:
        """The index's name for one side of a path, and its content when it is to be kept
        (``digest``: the content's, when the caller has it)."""
        if side is None:
            return None, None
        if isinstance(side, str):
            if side == DIRECTORY:
                return _DIRECTORY_REF, None
            return (side if side in self._catalog else _UNKEPT + side), None
        digest = digest or content_digest(side)
        if len(side) > MAX_KEPT_BYTES:
            return _UNKEPT + digest, None
        return digest, side

    def contents_under(self, tree: Tree, directory: str) -> list[PathChange]:
        """Everything under ``directory`` (itself included), as removals: for the entry of a
        ``workspace_rmdir``. Scans it first, so what it holds is kept (and a change made
        there outside the tools is recorded as such). Call it holding the tree's lock.

        Raises:
            StoreError: the journal cannot be read or written.
        """
        self.scan(tree, under=directory)
        prefix = directory + "/"
        with self._lock:
            found = [
                PathChange(
                    path=path,
                    before=DIRECTORY if ref == _DIRECTORY_REF else (ref or "").lstrip(_UNKEPT) or None,
                    after=None,
                    before_mode=stat[3] if stat is not None else None,
                )
                for path, (stat, ref) in self._files.items()
                if path.startswith(prefix)
            ]
        return [PathChange(path=directory, before=DIRECTORY, after=None), *found]

    def _store_version(
        self, ref: Ref, data: bytes | None, base: tuple[str, bytes, BlobInfo] | None, encoded: dict[str, EncodedBlob]
    ) -> tuple[str, bytes, BlobInfo] | None:
        """Encode ``data`` under ``ref`` unless it is stored; returns it as a base for the next."""
        if ref is None or data is None:
            return None
        info = self._catalog.get(ref)
        if info is None:
            blob = encoded.get(ref) or self.blobs.encode(ref, data, base)
            encoded[ref] = blob
            info = blob.info
        else:
            self.blobs.remember(ref, data)
        return ref, data, info

    def commit(
        self,
        prepared: Prepared,
        author: Author,
        *,
        tool: str,
        summary: str | None = None,
        answer: str | Callable[[int], str] | None = None,
        call: CallKey | None = None,
        undoes: Sequence[int] = (),
    ) -> int:
        """Record a change whose files are written: its entry (and the entry of what was
        noticed first), the baseline, the catalog and ``call``'s answer, in one transaction,
        which also removes ``call``'s :class:`CallIntent`.

        ``summary`` defaults to a line naming the paths; ``answer`` (what the tool returns,
        or a function of the new entry's id giving it) is recorded for ``call``.
        Returns the entry's id (0 when ``prepared`` holds no path).

        Raises:
            StoreError / OutcomeUnknown: the transaction failed; nothing was recorded (the
                caller puts its files back).
        """
        with self._lock:
            with self.store.write(self.index_namespace, since=self._version) as txn:
                self._absorb(txn.catch_up)
                rows: list[Change] = []
                seq = self._seq
                now = time.time()
                if prepared.noticed:
                    seq += 1
                    rows.append(self._found_row(seq, now, prepared.noticed))
                entry_id = 0
                if prepared.items:
                    seq = entry_id = seq + 1
                    entry = StoredEntry(
                        id=seq,
                        at=now,
                        member=author.member,
                        team=author.team,
                        tool=tool,
                        task_id=author.task_id,
                        files=tuple(prepared.items),
                        summary=summary if summary is not None else _summary(prepared.items),
                        command=None,
                        undoes=tuple(undoes),
                        call=call.key if call is not None else None,
                    )
                    rows.append(Change(collection=_CHANGES, key=_entry_key(seq), value=entry.to_json()))
                rows += self._baseline_rows(prepared.baseline)
                rows += [Change(collection=_CATALOG, key=d, value=info.to_json()) for d, info in prepared.blobs.items()]
                rows.append(self._meta_row(seq, self._complete))
                if call is not None and answer is not None:
                    text = answer(entry_id) if callable(answer) else answer
                    rows += self._calls.record(call, text, txn.version + 1)
                if call is not None and call.key in self._intents:
                    rows.append(Change(collection=_INTENTS, key=call.key, value=None))
                txn.stage(rows)
            self._mirror(rows, txn.committed)
        self._retain()
        return entry_id

    # -- keyed changes cut short ------------------------------------------------------------------

    def settle(self, tree: Tree) -> None:
        """Catch up, then settle every intent whose writer can no longer commit it
        (:attr:`CallIntent.abandoned`) against what ``tree`` holds now.

        Each planned path is compared with its before and after states:

        * every file at its after-state (killed after writing, before the commit): the
          change is committed as the call's entry (its author and tool, not ``outside``)
          and the call is recorded with an answer saying it was applied before its server
          stopped, naming the paths, so a retry gets that answer and writes nothing;
        * every file at its before-state (killed before writing): the intent is dropped,
          and a retry applies the change;
        * otherwise (a change of several files cut between them, or a path changed since
          by something else): what was applied is the call's entry, and the call is recorded
          with an answer naming what was applied, what was not and what is not known.

        Call it holding the tree's lock, from the tree's actor, never between a
        :meth:`prepare` and its :meth:`commit`.

        Raises:
            StoreError: the journal cannot be read or written.
        """
        self.refresh()
        if self._intents:
            self._settle_abandoned(tree)

    def _settle_abandoned(self, tree: Tree) -> None:
        with self._lock:
            abandoned = [intent for intent in self._intents.values() if intent.abandoned]
        for intent in abandoned:
            self._settle(tree, intent)

    def _settle(self, tree: Tree, intent: CallIntent) -> None:
        with self._lock:
            recorded = intent.call.key in self._calls
        if recorded:
            self._drop_intent(intent)  # its call is answered already: only the row was left
            return
        states: dict[str, Ref] = {}
        for path, *_ in intent.items:
            state = path_state(tree, path)
            states[path] = _DIRECTORY_REF if state == DIRECTORY else state

        def after(item: Item) -> bool:
            return _state_is(states[item[0]], item[2])

        def before(item: Item) -> bool:
            return _state_is(states[item[0]], item[1])

        changed = [item for item in intent.items if not _same(item[1], item[2])]
        # Directories made on the way stand with the files they were made for.
        files = [item for item in changed if _DIRECTORY_REF not in (item[1], item[2])] or changed
        applied = [item for item in files if after(item)]
        missing = [item for item in files if not after(item) and before(item)]
        unknown = [item for item in files if not after(item) and not before(item)]
        if not applied and not unknown:
            self._drop_intent(intent)
            return
        entry = [item for item in intent.items if after(item)]
        kept_before = {item[0]: item[1] for item in missing}
        done = {item[0] for item in entry} | set(kept_before)
        # A path left at its before-state that was noticed changed outside gets that state.
        noticed_paths = {item[0] for item in intent.noticed}
        baseline = {item[0]: item[2] for item in entry} | {
            path: ref for path, ref in kept_before.items() if path in noticed_paths
        }
        prepared = Prepared(
            items=entry,
            noticed=[item for item in intent.noticed if item[0] in done],
            blobs=dict(intent.blobs),
            baseline=baseline,
        )
        logger.info(
            "Journal of %s: settled the %s call of %s its process left (%d applied, %d not, %d unknown)",
            self.workspace_id,
            intent.tool,
            intent.author.member,
            len(applied),
            len(missing),
            len(unknown),
        )
        self.commit(
            prepared,
            intent.author,
            tool=intent.tool,
            answer=lambda entry_id: _settled_answer(intent.tool, entry_id, entry, applied, missing, unknown),
            call=intent.call,
        )

    def _drop_intent(self, intent: CallIntent) -> None:
        with self._lock:
            with self.store.write(self.index_namespace, since=self._version) as txn:
                self._absorb(txn.catch_up)
                rows = [Change(collection=_INTENTS, key=intent.call.key, value=None)]
                if intent.call.key not in self._intents:
                    rows = []  # settled by another process meanwhile
                txn.stage(rows)
            self._mirror(rows, txn.committed)

    # -- scans ---------------------------------------------------------------------------------

    def scan(
        self,
        tree: Tree,
        *,
        ended: RunningCommand | None = None,
        register: RunningCommand | None = None,
        under: str = "",
    ) -> list[int]:
        """Compare the tree with the baseline and record what changed; returns the new ids.

        Call it holding the tree's lock. What is found is attributed to ``ended`` (a command
        that just finished, whose registration is removed), else to the command running in
        the tree, else to ``outside``. ``register`` adds a running command in the same
        transaction. ``under`` scans one directory only (before it is removed).
        The first complete scan of a tree records no change: it adopts what is there as
        the baseline (reading and storing every file once).

        Raises:
            StoreError: the journal cannot be read or written.
        """
        self.refresh()
        if self._intents:
            self._settle_abandoned(tree)
        with self._lock:
            prefix = f"{under}/" if under and under != "." else ""
            found = scan_tree(tree, self._files, keep_bytes=MAX_KEPT_BYTES, under=under)
            if not prefix:
                self._scanned_at = time.monotonic()
            items, baseline, contents = self._compare(found, prefix)
            if self._intents:
                # What an intent still waiting for its writer names is its writer's to record.
                held = {item[0] for intent in self._intents.values() for item in intent.items}
                items = [item for item in items if item[0] not in held]
                baseline = {path: ref for path, ref in baseline.items() if path not in held}
                contents = {path: data for path, data in contents.items() if path not in held}
            if not self._complete:
                # A first look: what was there is adopted silently; only files the journal
                # knew already (from the tools' changes) are changes.
                items = [item for item in items if item[1] is not None]
            bases = self.contents(before for path, before, _, _, _ in items if path in contents) if items else {}
            encoded: dict[str, EncodedBlob] = {}
            previous = {item[0]: item[1] for item in items}
            for path, data in contents.items():
                ref = baseline[path]
                before = (previous.get(path) or "").lstrip(_UNKEPT)
                base_data = bases.get(before) if before else None
                base = (before, base_data, self._catalog[before]) if base_data is not None else None
                self._store_version(ref, data, base, encoded)
            over = [key for key, running in self._running.items() if running.over]
            quiet = not items and not baseline and register is None and ended is None and not over
            if quiet and (self._complete or prefix):
                return []
            if encoded:
                self.blobs.write(list(encoded.values()))
            with self.store.write(self.index_namespace, since=self._version) as txn:
                self._absorb(txn.catch_up)
                rows: list[Change] = []
                seq = self._seq
                ids: list[int] = []
                if items:
                    seq += 1
                    ids.append(seq)
                    rows.append(self._found_row(seq, time.time(), items, ended))
                rows += self._baseline_rows(baseline, stats=found.files)
                rows += [Change(collection=_CATALOG, key=d, value=b.info.to_json()) for d, b in encoded.items()]
                if ended is not None:
                    rows.append(Change(collection=_RUNNING, key=ended.key, value=None))
                if register is not None:
                    rows.append(Change(collection=_RUNNING, key=register.key, value=register.to_json()))
                # A command past its deadline or whose process ended (kill -9) is over: what this
                # scan found is filed as its, what a later one finds is not.
                rows += [Change(collection=_RUNNING, key=key, value=None) for key in over]
                rows.append(self._meta_row(seq, self._complete or (found.complete and not prefix)))
                txn.stage(rows)
            self._mirror(rows, txn.committed)
        if ids:
            self._retain()
        return ids

    def _compare(
        self, found: Scan, prefix: str
    ) -> tuple[list[tuple[str, Ref, Ref, int | None, int | None]], dict[str, Ref], dict[str, bytes]]:
        """What the scan found against the baseline: the entry's items, the baseline's new
        refs, and the contents to store (the caller holds the lock)."""
        items: list[tuple[str, Ref, Ref, int | None, int | None]] = []
        baseline: dict[str, Ref] = {}
        contents: dict[str, bytes] = {}
        unsettled = self._unsettled
        unsettled.clear()
        for path, read in found.read.items():
            known_stat, known_ref = self._files.get(path, (None, None))
            ref = read.digest if read.data is not None else _UNKEPT + read.digest
            mode = read.stat[3]
            if read.data is not None:
                contents[path] = read.data
            elif read.deferred:
                unsettled.add(path)  # no status in the baseline: the next scan reads it again
            if _same(known_ref, ref) and (known_stat is None or known_stat[3] == mode):
                baseline[path] = ref  # the status changed, not the content
                continue
            old_mode = known_stat[3] if known_stat is not None else None
            items.append((path, known_ref, ref, old_mode, mode))
            baseline[path] = ref
        for path in found.directories:
            known = self._files.get(path)
            if known is None or known[1] != _DIRECTORY_REF:
                # A file turned into a directory keeps its bits in the entry, for an undo to restore.
                old_mode = known[0][3] if known is not None and known[0] is not None else None
                items.append((path, known[1] if known is not None else None, _DIRECTORY_REF, old_mode, None))
                baseline[path] = _DIRECTORY_REF
        if found.complete:
            # Set differences in C first: the loop below meets only what is gone (or a directory).
            for path in self._files.keys() - found.files.keys() - found.directories:
                if (prefix and not path.startswith(prefix)) or not is_journaled(path):
                    continue
                status, seen = self._files[path]
                items.append((path, seen, None, status[3] if status is not None else None, None))
                baseline[path] = None
        items.sort(key=lambda item: item[0])
        return items, baseline, contents

    def _found_row(
        self,
        seq: int,
        at: float,
        items: Sequence[tuple[str, Ref, Ref, int | None, int | None]],
        ended: RunningCommand | None = None,
    ) -> Change:
        """The entry of changes found rather than made: by ``ended``, else by the command
        running in the tree (the earliest), else outside the tools."""
        running = self.running()
        source = ended or (running[0] if running else None)
        if source is None:
            author, tool, command = Author(member="", team=""), OUTSIDE, None
        else:
            author, tool, command = source.author, "exec_command", source.command
        summary = _summary(items)
        others = [r for r in running if source is None or r.key != source.key]
        if source is not None and others:
            summary += f" (while {len(others)} other command{'s' if len(others) > 1 else ''} ran)"
        entry = StoredEntry(
            id=seq,
            at=at,
            member=author.member,
            team=author.team,
            tool=tool,
            task_id=author.task_id,
            files=tuple(items),
            summary=summary,
            command=command,
            undoes=(),
            call=None,
        )
        return Change(collection=_CHANGES, key=_entry_key(seq), value=entry.to_json())

    def _baseline_rows(self, refs: Mapping[str, Ref], *, stats: Mapping[str, Stat] | None = None) -> list[Change]:
        rows: list[Change] = []
        for path, ref in refs.items():
            if not is_journaled(path):
                continue
            if ref is None:
                rows.append(Change(collection=_FILES, key=path, value=None))
                if path in self._files and self._files[path][1] == _DIRECTORY_REF:
                    below = path + "/"
                    rows += [Change(collection=_FILES, key=p, value=None) for p in self._files if p.startswith(below)]
                continue
            status = stats.get(path) if stats is not None and path not in self._unsettled else None
            rows.append(Change(collection=_FILES, key=path, value=[*(status or (None, None, None, None)), ref]))
        return rows

    def _meta_row(self, seq: int, complete: bool, compacted: int | None = None) -> Change:
        value = {"seq": seq, "compacted": self._compacted if compacted is None else compacted, "complete": complete}
        return Change(collection=_META, key=_META_KEY, value=value)

    def _mirror(self, rows: Sequence[Change], committed: int | None) -> None:
        """Apply rows this process committed to its cache (the caller holds the lock)."""
        for row in rows:
            if row.collection == CALLS:
                self._calls.absorb(row)
            else:
                self._absorb_row(row.collection, row.key, row.value)
        if committed is not None:
            self._version = committed

    # -- retention -----------------------------------------------------------------------------

    def _retain(self) -> None:
        """Drop the oldest entries past the retention limits, and the versions only they needed."""
        with self._lock:
            now = time.time()
            oldest = next(iter(self._entries.values()), None)
            too_old = oldest is not None and oldest.at < now - self.settings.max_age_s
            if not too_old and self._stored - self._baseline_bytes <= self.settings.max_bytes:
                return
            try:
                self._compact(now)
            except Exception:
                # Retention is housekeeping: the change itself is recorded.
                logger.exception(
                    "Journal of %s: retention failed; it is tried again at the next change", self.workspace_id
                )

    def _compact(self, now: float) -> None:
        entries = list(self._entries.values())
        age_cut = 0
        while age_cut < len(entries) and entries[age_cut].at < now - self.settings.max_age_s:
            age_cut += 1
        self._baseline_bytes = baseline_bytes = sum(self._catalog[d].size for d in self._live(()))
        target = self.settings.max_bytes * _HISTORY_TARGET

        def history_bytes(cut: int) -> int:
            return sum(self._catalog[d].size for d in self._live(entries[cut:])) - baseline_bytes

        cut = age_cut
        if history_bytes(cut) > self.settings.max_bytes:
            low, high = cut, len(entries)  # the smallest cut within target is in (low, high]
            while high - low > 1:
                middle = (low + high) // 2
                if history_bytes(middle) <= target:
                    high = middle
                else:
                    low = middle
            cut = high
        if cut == 0:
            return
        dropped = entries[:cut]
        live = self._live(entries[cut:])
        dead = {digest: info for digest, info in self._catalog.items() if digest not in live}
        with self.store.write(self.index_namespace, since=self._version) as txn:
            self._absorb(txn.catch_up)
            rows = [Change(collection=_CHANGES, key=_entry_key(entry.id), value=None) for entry in dropped]
            rows += [Change(collection=_CATALOG, key=digest, value=None) for digest in dead]
            rows.append(self._meta_row(self._seq, self._complete, compacted=max(self._compacted, dropped[-1].id)))
            txn.stage(rows)
        self._mirror(rows, txn.committed)
        self.blobs.delete(dead)
        logger.info(
            "Journal of %s: retention dropped changes %d-%d and %d stored versions",
            self.workspace_id,
            dropped[0].id,
            dropped[-1].id,
            len(dead),
        )

    def _live(self, entries: Iterable[StoredEntry]) -> set[str]:
        """The stored versions the baseline and ``entries`` need, with the bases they are
        deltas against (the caller holds the lock)."""
        wanted = [ref for _, ref in self._files.values()]
        for entry in entries:
            for _, before, after, _, _ in entry.files:
                wanted += (before, after)
        live: set[str] = set()
        for ref in wanted:
            current = ref.lstrip(_UNKEPT) if ref else None
            while current is not None and current not in live:
                info = self._catalog.get(current)
                if info is None:
                    break
                live.add(current)
                current = info.base
        return live


def _entry_key(entry_id: int) -> str:
    return f"{entry_id:010d}"


def _same(a: Ref, b: Ref) -> bool:
    """Whether two refs name the same content (kept or not)."""
    if a is None or b is None:
        return a is b
    return a.lstrip(_UNKEPT) == b.lstrip(_UNKEPT)


def _file_change(item: tuple[str, Ref, Ref, int | None, int | None]) -> FileChange:
    path, before, after, before_mode, after_mode = item

    def public(ref: Ref) -> str | None:
        if ref is None:
            return None
        if ref == _DIRECTORY_REF:
            return DIRECTORY
        return ref.lstrip(_UNKEPT)

    return FileChange(
        path=path,
        before=public(before),
        after=public(after),
        before_mode=before_mode,
        after_mode=after_mode,
        before_kept=not (before or "").startswith(_UNKEPT),
        after_kept=not (after or "").startswith(_UNKEPT),
    )


def _with_ancestors(paths: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for path in paths:
        out.add(path)
        parts = path.split("/")
        for end in range(1, len(parts)):
            out.add("/".join(parts[:end]))
    return out


def _summary(items: Sequence[tuple[str, Ref, Ref, int | None, int | None]]) -> str:
    """One line saying what ``items`` did: ``"changed a.py, created b/"`` (at most three named)."""
    words = []
    for path, before, after, before_mode, after_mode in items[:3]:
        shown = display_name(path) + ("/" if _DIRECTORY_REF in (before, after) else "")
        if before is None:
            words.append(f"created {shown}")
        elif after is None:
            words.append(f"deleted {shown}")
        elif _same(before, after):
            words.append(
                f"mode of {shown}" + (f" {before_mode:o} -> {after_mode:o}" if before_mode and after_mode else "")
            )
        else:
            words.append(f"changed {shown}")
    more = f" and {len(items) - 3} more" if len(items) > 3 else ""
    return ", ".join(words) + more


def _item(value: Sequence[Any]) -> Item:
    """An entry's path read back from a row."""
    return (str(value[0]), value[1], value[2], value[3], value[4])


def _state_is(state: Ref, ref: Ref) -> bool:
    """Whether a path's state (as :func:`~toolcards.workspace._scan.path_state` gives it,
    directories as ``"/"``) is the version ``ref`` names."""
    return state != UNKNOWN_STATE and _same(state, ref)


def _named(items: Sequence[Item]) -> str:
    """The paths of ``items`` as a sentence names them (at most :data:`_LISTED_PATHS`)."""
    names = [display_name(item[0]) + ("/" if _DIRECTORY_REF in (item[1], item[2]) else "") for item in items]
    shown = names[:_LISTED_PATHS]
    more = f" and {len(names) - len(shown)} more" if len(names) > len(shown) else ""
    if len(shown) > 1 and not more:
        return ", ".join(shown[:-1]) + " and " + shown[-1]
    return ", ".join(shown) + more


def _settled_answer(
    tool: str,
    entry_id: int,
    entry: Sequence[Item],
    applied: Sequence[Item],
    missing: Sequence[Item],
    unknown: Sequence[Item],
) -> str:
    """What a retry of a call settled after its process died is told (see :meth:`Journal.settle`)."""
    change = f" (change {entry_id})" if entry_id else ""
    if not missing and not unknown:
        return (
            f"This {tool} call was applied before its server stopped, and its answer was lost: it "
            f"{_summary(entry)}{change}. Nothing was written again; read the files to see them as they are now."
        )
    if missing:
        parts = [f"This {tool} call was cut short when its server stopped, and its answer was lost."]
    else:
        parts = [f"This {tool} call's server stopped before recording it, and its answer was lost."]
    if applied:
        parts.append(f"It {_summary(entry)}{change}.")
    if missing:
        verb = "was" if len(missing) == 1 else "were"
        parts.append(f"{_named(missing)} {verb} not changed.")
    if unknown:
        verb, them = ("was", "it") if len(unknown) == 1 else ("were", "them")
        parts.append(
            f"{_named(unknown)} {verb} changed since by something else, so whether this call changed {them} "
            f"is not known: read {them} before doing it again."
        )
    parts.append("Nothing was written again.")
    if missing:
        parts.append("To finish it, make what is missing as a new call.")
    if applied and entry_id:
        parts.append(f"To take back what it did, call workspace_undo with change_id={entry_id}.")
    return " ".join(parts)
