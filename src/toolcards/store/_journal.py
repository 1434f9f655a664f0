"""A team's event log in the store, shared by every process of the team.

:class:`StoreJournal` implements :class:`toolcards.actors.EventJournal` on the namespace
``"<team_id>/#events"``: appending an event is one store write whose new version *is* the
event's sequence number, so numbers are gapless and unique across every process (and host)
writing to the team. The last :data:`~toolcards.actors._journal.EVENT_LOG_SIZE` events are
kept; each append deletes the one that falls out.

Frequent events (one per tool call) are appended in batches (:meth:`StoreJournal.append_all`):
one write, one entry, one number shared by the batch's events, stored as
``{"batch": [event, ...]}``; :data:`~toolcards.actors._journal.EVENT_LOG_SIZE` counts entries.

Events are stored as JSON: a pydantic model as ``{"type": "module:Class", "data": ...}``.
Reading it back gives the same class when that class is already imported in the reading
process (events are never a reason to import code named in the database); otherwise a
:class:`RecordedEvent` carrying the same fields, so subscribers reading ``kind``,
``team_id`` or ``source`` work either way. Anything that is not a pydantic model is stored
as its ``repr``.

Each event is encoded on its own, so one that cannot be stored never costs the others of its
batch their place in the log: a string holding a lone surrogate (which UTF-8 cannot carry: a
file name that is not UTF-8, text a client sent as ``"\\ud800"``) is written with it as its
escape text; an event that still is not JSON (a NaN) is stored as its ``repr``. Either
way a warning names the event, where it comes from and why.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from toolcards.actors._journal import EVENT_LOG_SIZE, JournalFactory
from toolcards.core._events import ToolcardsEvent
from toolcards.core._surrogates import escape_surrogates
from toolcards.store._base import Change, Delta, Store
from toolcards.store._codec import JSONText, stored_text

__all__ = ["EVENTS_NAMESPACE", "RecordedEvent", "StoreJournal", "store_journals"]

EVENTS_NAMESPACE = "#events"
"""The suffix of a team's event-log namespace: ``"<team_id>/#events"``."""

_EVENTS = "events"

logger = logging.getLogger("toolcards.store")


class RecordedEvent(ToolcardsEvent):
    """An event read back from the log whose class is not loaded in this process.

    It carries every field the event had, as attributes.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    kind: str = "event"


class StoreJournal:
    """The event log of team ``team_id`` in ``store``; see the module docstring.

    Called from the team orchestrator's thread. Every method may raise
    :class:`~toolcards.errors.StoreError`; the orchestrator logs it.
    """

    def __init__(self, store: Store, team_id: str, *, size: int = EVENT_LOG_SIZE) -> None:
        self.store = store
        self.team_id = team_id
        self.namespace = f"{team_id}/{EVENTS_NAMESPACE}"
        self.size = size

    @property
    def shared(self) -> bool:
        """Whether other processes can append to this log (as the store is shared)."""
        return self.store.shared

    def head(self) -> int:
        """The number of the last event appended by any process."""
        return self.store.version(self.namespace)

    def append(self, event: Any) -> int:
        """Append ``event`` in one store write; returns its team-wide number."""
        return self._write(JSONText(self._entry_text(event)))

    def append_all(self, events: Sequence[Any]) -> int:
        """Append ``events`` as one entry, in one store write; returns the number they share.

        Each event is encoded on its own: one that is not JSON is repaired (see the module
        docstring), and the others are written as they are.
        """
        return self._write(JSONText('{"batch":[' + ",".join(self._entry_text(event) for event in events) + "]}"))

    def _entry_text(self, event: Any) -> str:
        """``event``'s entry as the JSON text the store keeps, repaired if need be."""
        try:
            entry = encode_event(event)
        except (TypeError, ValueError, RecursionError) as exc:  # a field pydantic cannot dump
            return self._repr_text(event, exc)
        try:
            return stored_text(entry)
        except (TypeError, ValueError, RecursionError) as exc:
            reason = exc
        escaped = escape_surrogates(entry)
        if escaped is not entry:
            try:
                text = stored_text(escaped)
            except (TypeError, ValueError, RecursionError) as exc:
                reason = exc
            else:
                logger.warning(
                    "team %s: %s holds text that is not Unicode (a lone surrogate); it is written to the event "
                    "log with each one written as its escape (such as \\ud800)",
                    self.team_id,
                    _event_label(event),
                )
                return text
        return self._repr_text(event, reason)

    def _repr_text(self, event: Any, reason: Exception) -> str:
        """The entry of an event that is not JSON: its ``repr``, which always is."""
        logger.warning(
            "team %s: %s is not JSON (%s); the event log keeps its repr instead",
            self.team_id,
            _event_label(event),
            " ".join(str(reason).split())[:300],
        )
        return stored_text({"type": None, "data": {"kind": "event", "text": repr(event)}})

    def _write(self, value: JSONText) -> int:
        with self.store.write(self.namespace, since=None) as txn:
            seq = txn.version + 1
            changes = [Change(collection=_EVENTS, key=_key(seq), value=value)]
            if seq > self.size:
                changes.append(Change(collection=_EVENTS, key=_key(seq - self.size), value=None))
            txn.stage(changes)
        return seq

    def since(self, seq: int) -> list[tuple[int, Any]]:
        """Kept events numbered above ``seq``, oldest first."""
        catch_up = self.store.read(self.namespace, since=seq)
        if isinstance(catch_up, Delta):
            rows = [(change.key, change.value) for change in catch_up.changes if change.value is not None]
        else:
            rows = list(catch_up.rows.get(_EVENTS, {}).items())
        events: list[tuple[int, Any]] = []
        for key, value in sorted(rows, key=lambda row: row[0]):
            number = int(key)
            if number <= seq:
                continue
            batch = value.get("batch") if isinstance(value, dict) else None
            if isinstance(batch, list):
                events.extend((number, decode_event(item)) for item in batch)
            else:
                events.append((number, decode_event(value)))
        return events


def store_journals(store: Store | None = None) -> JournalFactory:
    """A journal factory for ``ActorSystem(journal=...)``: each team's log in ``store``.

    ``None`` means this process's default store, looked up when a team starts.
    """

    def journal(team_id: str) -> StoreJournal:
        from toolcards.store._default import default_store

        return StoreJournal(store if store is not None else default_store(), team_id)

    return journal


def encode_event(event: Any) -> dict[str, Any]:
    """``event`` as the JSON the log keeps."""
    if isinstance(event, BaseModel):
        kind = type(event)
        return {"type": f"{kind.__module__}:{kind.__qualname__}", "data": event.model_dump(mode="json")}
    return {"type": None, "data": {"kind": "event", "text": repr(event)}}


def _event_label(event: Any) -> str:
    """``event`` named for a log line: its kind and where it comes from."""
    kind = getattr(event, "kind", None) or type(event).__name__
    origin = getattr(event, "source", None) or getattr(event, "tool", None)
    agent = getattr(event, "agent", None)
    label = f"a {kind} event"
    if isinstance(origin, str):
        label += f" from {escape_surrogates(origin)}"
    if isinstance(agent, str):
        label += f" of {escape_surrogates(agent)}"
    return label


def decode_event(value: Any) -> Any:
    """The event stored as ``value``: its own class if loaded here, else a :class:`RecordedEvent`."""
    data = value.get("data") if isinstance(value, dict) else None
    if not isinstance(data, dict):
        return RecordedEvent.model_validate({"kind": "event", "text": repr(value)})
    kind = _loaded_class(value.get("type"))
    if kind is not None:
        try:
            return kind.model_validate(data)
        except ValidationError:
            pass
    try:
        return RecordedEvent.model_validate(data)
    except ValidationError:
        return RecordedEvent.model_validate({"kind": str(data.get("kind", "event")), "data": data})


def _loaded_class(name: Any) -> type[BaseModel] | None:
    if not isinstance(name, str) or ":" not in name:
        return None
    module_name, _, qualname = name.partition(":")
    target: Any = sys.modules.get(module_name)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target if isinstance(target, type) and issubclass(target, BaseModel) else None


def _key(seq: int) -> str:
    # Zero-padded, so rows sort by number wherever keys are sorted as text.
    return f"{seq:012d}"
