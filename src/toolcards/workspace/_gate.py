"""The read-before-write gate: no agent overwrites what it has not seen.

:class:`WriteGate` remembers, per agent and file, the :class:`ReadRecord` of what that agent
last read (or wrote) and decides whether a change may go ahead: creating a file needs no read;
changing an existing one needs a record whose digest equals the file's *current* bytes, so a
change by anyone since the read (another agent, a shell command, another process) refuses it;
a page read (``full=False``) licenses an anchored change (an edit or a patch, whose context
proves the agent saw that part), not an overwrite; after an agent's own change its record
becomes the new content, and every other agent's record is stale by construction.

One agent may work in several conversations at once (:mod:`toolcards.core._conversation`:
two pydantic-ai runs, two MCP connections acting as one member). Its record is shared by
them, so each also remembers what it saw itself: a change in conversation X is refused when
the agent learned the file's current version in another conversation (wrote it, or read it
after someone else did) after X began, and X has not read or written that version since. What
was learned before X began counts as known, because X may have it in its history (the next run
of a chat, a client that reconnected). A call without a conversation is checked as the agent.

A file that is not text (:func:`~toolcards.workspace._text.is_text`: not UTF-8, or holding a NUL
byte) cannot be read, only learned of: the answer that tells an agent so counts as its read.
A refusal of a change to such a file the agent has not seen at its current version records
that version as seen (whole) and says so: the same call again overwrites it, and an edit,
which cannot change it, points to workspace_write. The card does the same when a read
refuses such a file or ``workspace_view`` shows an image. A text file is never recorded
without having been read.

A refusal is a :class:`~toolcards.errors.RetriableError` ordered by usefulness: what to do
next, who changed the file (an agent's handle when this process knows it, else "outside the
workspace tools ..., or through them by another process"), then a diff from the version read,
as untrusted output. The diff's old bytes come from :class:`SnapshotCache`, a bounded LRU by
digest (:data:`SNAPSHOT_BUDGET_BYTES`, files over :data:`SNAPSHOT_MAX_FILE_BYTES` not kept);
when the version is gone the message says so.

Agents are opaque strings (the card passes ``"<team_id>/@<name>"``). Pure logic, no I/O. Each
public method holds the gate's lock, so readers record in their own threads while the tree's
:class:`~toolcards.workspace._actor.WorkspaceActor` checks and records changes; a record is
always what its agent really read, so one stored between the actor's check and its write is
that write's content or, if older, refused later as stale.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Literal

from toolcards.core._conversation import Conversation, moment
from toolcards.errors import RetriableError
from toolcards.workspace._models import ReadRecord, content_digest
from toolcards.workspace._text import NotText, binary_error, file_text, is_text, quote_file_text, unified_diff

__all__ = [
    "MAX_CONVERSATIONS",
    "MAX_RECORDS_PER_AGENT",
    "MAX_RECORDS_PER_CONVERSATION",
    "REFUSAL_DIFF_LINES",
    "SNAPSHOT_BUDGET_BYTES",
    "SNAPSHOT_MAX_FILE_BYTES",
    "Intent",
    "SnapshotCache",
    "WriteGate",
]

SNAPSHOT_BUDGET_BYTES = 64 * 1024 * 1024
"""Total bytes of file versions :class:`SnapshotCache` keeps by default."""

SNAPSHOT_MAX_FILE_BYTES = 2 * 1024 * 1024
"""Versions larger than this are not kept (a refusal then shows no diff)."""

MAX_RECORDS_PER_AGENT = 10_000
"""Read records kept per agent; past that the least recently used is forgotten (the agent
is then asked to read that file again)."""

MAX_CONVERSATIONS = 256
"""Conversations whose own reads are kept; past that the least recently active is forgotten.
Forgetting errs on the safe side: one that calls again keeps its beginning (its
:class:`~toolcards.core._conversation.Conversation` carries it) but has seen nothing, so it is
asked to read again what another conversation of its agent changed since it began."""

MAX_RECORDS_PER_CONVERSATION = 1_000
"""Files a conversation's own reads are kept for; past that the least recently used is
forgotten, with the same safe effect."""

REFUSAL_DIFF_LINES = 200
"""Lines of diff a refusal shows at most."""

Intent = Literal["overwrite", "edit"]
"""What a change does to an existing file: replace it whole, or change anchored parts."""


class SnapshotCache:
    """File versions by digest, least recently used evicted first, bounded in bytes.

    Not thread-safe: one owner (the workspace actor) calls it.
    """

    def __init__(self, max_bytes: int = SNAPSHOT_BUDGET_BYTES, max_file_bytes: int = SNAPSHOT_MAX_FILE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.max_file_bytes = min(max_file_bytes, max_bytes)
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0

    def add(self, digest: str, data: bytes) -> None:
        """Keep ``data`` under ``digest`` unless it is larger than ``max_file_bytes``."""
        if len(data) > self.max_file_bytes:
            return
        if digest in self._items:
            self._items.move_to_end(digest)
            return
        self._items[digest] = data
        self._size += len(data)
        while self._size > self.max_bytes:
            _, evicted = self._items.popitem(last=False)
            self._size -= len(evicted)

    def get(self, digest: str) -> bytes | None:
        """The version with ``digest``, or ``None`` if it was never kept or was evicted."""
        data = self._items.get(digest)
        if data is not None:
            self._items.move_to_end(digest)
        return data

    def __len__(self) -> int:
        return len(self._items)


class _Seen:
    """What one conversation of one agent read or wrote: each file's digest as it last did."""

    __slots__ = ("began", "digests")

    def __init__(self, began: int) -> None:
        self.began = began
        self.digests: OrderedDict[str, str] = OrderedDict()


class WriteGate:
    """Read records per agent and file, what each conversation of an agent saw of them, the
    last writer of each file, and the checks.

    Paths are the canonical root-relative POSIX paths the caller resolved; the gate does
    not touch the disk. Thread-safe: each public method runs under the gate's lock (its
    :class:`SnapshotCache` is reached only through it).
    """

    def __init__(
        self,
        snapshots: SnapshotCache | None = None,
        *,
        max_records_per_agent: int = MAX_RECORDS_PER_AGENT,
        max_conversations: int = MAX_CONVERSATIONS,
        max_records_per_conversation: int = MAX_RECORDS_PER_CONVERSATION,
    ) -> None:
        self.snapshots = snapshots if snapshots is not None else SnapshotCache()
        self.max_records_per_agent = max_records_per_agent
        self.max_conversations = max_conversations
        self.max_records_per_conversation = max_records_per_conversation
        self._records: dict[str, OrderedDict[str, ReadRecord]] = {}
        self._writers: dict[str, tuple[str, str]] = {}
        self._seen: OrderedDict[tuple[str, str], _Seen] = OrderedDict()
        """(agent, conversation id) → what that conversation saw, least recently active first."""
        self._lock = threading.Lock()

    # -- recording --------------------------------------------------------------------------

    def record_read(
        self,
        agent: str,
        path: str,
        data: bytes | None,
        *,
        full: bool,
        digest: str | None = None,
        conversation: Conversation | None = None,
    ) -> ReadRecord:
        """Remember that ``agent`` read ``data`` as the content of ``path`` (all of it if ``full``),
        in ``conversation`` when the call had one.

        ``digest`` may be passed when the caller already computed it; it is required when
        ``data`` is ``None`` (a file streamed rather than held: no snapshot is kept, so a
        later refusal cannot show what changed). Returns the record.
        """
        if data is None and digest is None:
            raise ValueError("record_read needs the data or its digest")
        digest = digest or content_digest(data or b"")
        with self._lock:
            record = self._note_read(agent, path, digest, full=full, conversation=conversation)
            if data is not None:
                self.snapshots.add(digest, data)
        return record

    def record_write(
        self,
        agent: str,
        path: str,
        data: bytes,
        *,
        full: bool | None = None,
        digest: str | None = None,
        conversation: Conversation | None = None,
    ) -> ReadRecord:
        """Remember that ``agent`` wrote ``data`` to ``path``, in ``conversation`` when the call
        had one: it becomes the agent's record.

        Args:
            full: whether the agent now knows the whole file: ``True`` after a whole-file
                write or a creation; ``None`` keeps what its previous record said (an edit
                changes what the agent knew, not how much of it), ``True`` if it had none.

        Returns the agent's new record.
        """
        digest = digest or content_digest(data)
        with self._lock:
            previous = self._record_of(agent, path)
            if full is None:
                full = previous.full if previous is not None else True
            learned_in = conversation.id if conversation is not None else None
            record = ReadRecord(digest=digest, full=full, learned_in=learned_in, learned_at=moment())
            self._store(agent, path, record)
            if conversation is not None:
                self._saw(agent, conversation, path, digest)
            self._writers[path] = (agent, record.digest)
            self.snapshots.add(record.digest, data)
        return record

    def forget(self, path: str, *, below: bool = False) -> None:
        """Drop every record of ``path`` (and, with ``below``, of every path under it)."""
        prefix = "" if path == "." else path + "/"

        def gone(candidate: str) -> bool:
            return candidate == path or (below and (path == "." or candidate.startswith(prefix)))

        with self._lock:
            for records in self._path_tables():
                for candidate in [p for p in records if gone(p)]:
                    del records[candidate]
            for candidate in [p for p in self._writers if gone(p)]:
                del self._writers[candidate]

    def move(self, source: str, destination: str) -> None:
        """``source`` (and every path under it) was moved to ``destination``: each agent's
        record follows the content it describes, and the records of what was at
        ``destination`` are dropped."""
        self.forget(destination, below=True)
        prefix = source + "/"

        def moved(candidate: str) -> str | None:
            if candidate == source:
                return destination
            if candidate.startswith(prefix):
                return destination + "/" + candidate[len(prefix) :]
            return None

        with self._lock:
            for records in self._path_tables():
                for candidate in [p for p in records if moved(p) is not None]:
                    records[moved(candidate) or candidate] = records.pop(candidate)
            for candidate in [p for p in self._writers if moved(p) is not None]:
                self._writers[moved(candidate) or candidate] = self._writers.pop(candidate)

    def record_of(self, agent: str, path: str) -> ReadRecord | None:
        """What ``agent`` last read or wrote of ``path``, if it is remembered."""
        with self._lock:
            return self._record_of(agent, path)

    # -- the check --------------------------------------------------------------------------

    def check(
        self,
        agent: str,
        path: str,
        current: bytes | None,
        intent: Intent,
        *,
        digest: str | None = None,
        conversation: Conversation | None = None,
    ) -> None:
        """Allow ``agent``'s change to ``path``, whose bytes are now ``current``, or refuse it.

        ``current`` is ``None`` when the file does not exist (a creation, always allowed).
        ``digest`` may be passed when the caller already hashed ``current``.
        ``conversation`` is the call's, when it has one (see the module docstring).

        Raises:
            RetriableError: the agent has not read the file, it changed since the agent read
                it, the agent learned its current version in another conversation after
                ``conversation`` began and this one has not seen it, or ``intent`` is
                ``"overwrite"`` after a page read. The message says to read it again, who
                changed it, and (when the version read is still cached) what changed.
                When ``current`` is not text, it cannot be read: the refusal records it as
                seen instead, and says to make the same call again (an overwrite) or to
                overwrite it with workspace_write (an edit, as a
                :class:`~toolcards.workspace._text.NotText`).
        """
        if current is None:
            return
        with self._lock:
            self._check(agent, path, current, intent, digest, conversation)

    # -- internals ----------------------------------------------------------------------------

    def _check(
        self,
        agent: str,
        path: str,
        current: bytes,
        intent: Intent,
        digest: str | None,
        conversation: Conversation | None,
    ) -> None:
        record = self._record_of(agent, path)
        if record is None:
            digest = digest or content_digest(current)
            self._refuse_if_not_text(agent, path, current, digest, intent, conversation, changed=False)
            hint = self._writer_note(agent, path, digest, last=True)
            raise RetriableError(
                f"Call workspace_read on {path!r} first, then retry: it exists and you have not read it, "
                f"so this change could overwrite work you have not seen.{hint}"
            )
        if digest is None and self.snapshots.get(record.digest) == current:
            digest = record.digest  # the very bytes read: no need to hash them again
        current_digest = digest or content_digest(current)
        if record.digest != current_digest:
            self._refuse_if_not_text(agent, path, current, current_digest, intent, conversation, changed=True)
            raise RetriableError(self._stale_message(agent, path, record.digest, current, current_digest))
        if conversation is not None and record.learned_in != conversation.id:
            seen = self._seen_by(agent, conversation)
            if record.learned_at > seen.began:
                known = seen.digests.get(path)
                if known != current_digest:
                    self._refuse_if_not_text(agent, path, current, current_digest, intent, conversation, changed=True)
                    raise RetriableError(self._unseen_message(agent, path, known, current, current_digest))
        if intent == "overwrite" and not record.full:
            raise RetriableError(
                f"Call workspace_read on {path!r} without offset and limit before overwriting it, or change "
                "part of it with workspace_edit: you have read only part of it, so overwriting it whole could "
                "drop lines you have not seen."
            )

    def _refuse_if_not_text(
        self,
        agent: str,
        path: str,
        current: bytes,
        current_digest: str,
        intent: Intent,
        conversation: Conversation | None,
        *,
        changed: bool,
    ) -> None:
        """The refusal of a change ``agent`` has not seen the current version of, when that
        version is not text: no tool can show it, so this answer stands for the read. It
        records the version as seen whole and raises; for a text file it returns (the caller
        raises the refusal that asks for a read). ``changed`` says the agent saw an older
        version."""
        if is_text(current):
            return
        self._note_read(agent, path, current_digest, full=True, conversation=conversation)
        who = self._changer_note(agent, path, current_digest, changed=changed)
        if intent == "edit":
            # Its version is now seen, so the overwrite this message points to goes through.
            refusal = binary_error(path, doing="edit")
            raise NotText(f"{refusal}\n{who}") if who else refusal
        if changed:
            why = "It changed since you saw it; it is not UTF-8 text, so what changed cannot be shown"
        else:
            why = "It exists and you had not seen it; it is not UTF-8 text, so workspace_read cannot show it"
        first = (
            f"Make the same call again to replace {path!r}; nothing was written this time. {why}, and this "
            "answer stands for reading it."
        )
        raise RetriableError(f"{first}\n{who}" if who else first)

    def _changer_note(self, agent: str, path: str, current_digest: str, *, changed: bool) -> str:
        """Who made the version ``current_digest`` of ``path``, for a refusal to ``agent``, who
        saw an older one (``changed``) or none."""
        if not changed:
            return self._writer_note(agent, path, current_digest, last=True).strip()
        if self._writers.get(path) == (agent, current_digest):
            return "It was changed by you, in another run or session working at the same time."
        return self._writer_note(agent, path, current_digest, last=False)

    def _note_read(
        self, agent: str, path: str, digest: str, *, full: bool, conversation: Conversation | None
    ) -> ReadRecord:
        """Record, holding the lock, that ``agent`` read the version ``digest`` of ``path``."""
        record = self._record_of(agent, path)
        if record is None or record.digest != digest:
            learned_in = conversation.id if conversation is not None else None
            record = ReadRecord(digest=digest, full=full, learned_in=learned_in, learned_at=moment())
        elif record.full != full:
            # The version the agent knew, seen more or less whole: when it learned it stays.
            record = ReadRecord(digest=digest, full=full, learned_in=record.learned_in, learned_at=record.learned_at)
        # else: read again unchanged, the record it has says the same (records are frozen)
        self._store(agent, path, record)
        if conversation is not None:
            self._saw(agent, conversation, path, digest)
        return record

    def _path_tables(self) -> list[OrderedDict[str, Any]]:
        """Every table keyed by path that follows a file: the agents' records and what each
        conversation saw."""
        return [*self._records.values(), *(seen.digests for seen in self._seen.values())]

    def _record_of(self, agent: str, path: str) -> ReadRecord | None:
        records = self._records.get(agent)
        return records.get(path) if records is not None else None

    def _store(self, agent: str, path: str, record: ReadRecord) -> None:
        records = self._records.setdefault(agent, OrderedDict())
        records[path] = record
        records.move_to_end(path)
        while len(records) > self.max_records_per_agent:
            records.popitem(last=False)

    def _saw(self, agent: str, conversation: Conversation, path: str, digest: str) -> None:
        digests = self._seen_by(agent, conversation).digests
        digests[path] = digest
        digests.move_to_end(path)
        while len(digests) > self.max_records_per_conversation:
            digests.popitem(last=False)

    def _seen_by(self, agent: str, conversation: Conversation) -> _Seen:
        """What ``conversation`` of ``agent`` saw, kept from its first call on."""
        key = (agent, conversation.id)
        seen = self._seen.get(key)
        if seen is None:
            seen = self._seen[key] = _Seen(conversation.began)
            while len(self._seen) > self.max_conversations:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(key)
        return seen

    def _stale_message(self, agent: str, path: str, read: str, current: bytes, current_digest: str) -> str:
        parts = [
            f"Call workspace_read on {path!r} again, then redo your change: it changed since you read it, "
            "so nothing was written.",
            self._writer_note(agent, path, current_digest, last=False).strip(),
            self._diff_note(path, read, current, "The version you read is no longer cached"),
        ]
        return "\n".join(part for part in parts if part)

    def _unseen_message(self, agent: str, path: str, read: str | None, current: bytes, current_digest: str) -> str:
        """The refusal of a change in a conversation that has not seen the version its agent
        learned in another one since it began."""
        since = "since this run or session of yours read it" if read is not None else "after this run or session began"
        parts = [
            f"Call workspace_read on {path!r} again, then redo your change: it changed {since}, so nothing "
            "was written.",
        ]
        writer = self._writers.get(path)
        if writer is not None and writer == (agent, current_digest):
            parts.append(
                "It was changed by you, in another run or session working at the same time (another request, "
                "connection or command acting as you); this one has not seen that version."
            )
        else:
            parts.append(self._writer_note(agent, path, current_digest, last=False).strip())
        if read is None:
            parts.append("(This run or session has not read it, so what changed cannot be shown.)")
        else:
            parts.append(self._diff_note(path, read, current, "The version this one read is no longer cached"))
        return "\n".join(part for part in parts if part)

    def _diff_note(self, path: str, read: str, current: bytes, gone: str) -> str:
        """What changed from the version with digest ``read`` to ``current``, quoted; or why
        it cannot be shown."""
        old = self.snapshots.get(read)
        if old is None:
            return f"({gone}, so what changed cannot be shown.)"
        try:
            diff = unified_diff(file_text(old, path), file_text(current, path), path, max_lines=REFUSAL_DIFF_LINES)
        except RetriableError:
            return "(It is a binary file, so what changed is not shown.)"
        return f"What changed since your read:\n{quote_file_text(diff.rstrip())}"

    def _writer_note(self, agent: str, path: str, current_digest: str, *, last: bool) -> str:
        writer = self._writers.get(path)
        if writer is not None and writer[1] == current_digest and writer[0] != agent:
            who = _display(writer[0], agent)
            return f" {who} wrote it last." if last else f"It was changed by {who} through the workspace tools."
        if last:
            return ""
        return "It was changed outside the workspace tools (e.g. by a command), or through them by another process."


def _display(writer: str, reader: str) -> str:
    """``writer`` as ``reader`` should read it: the bare handle when both are in one team."""
    team, sep, handle = writer.rpartition("/")
    if sep and reader.startswith(team + "/"):
        return handle
    return writer
