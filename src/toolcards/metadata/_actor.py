"""``MetadataActor``: the team's metadata, one actor per team, kept in the store.

The namespace ``"<team_id>/#MetadataTool"`` holds one row per field (collection ``fields``)
and the notes (collection ``text``), so two processes setting different fields at once both
keep theirs. A read first asks the store whether anything changed (one cheap call), so a
change made by any process shows at the next render; a change is committed before it is
acknowledged.
"""

from __future__ import annotations

from collections.abc import Mapping

import pykka
from pykka.typing import ActorMemberMixin, proxy_method

from toolcards.actors._caller_runs import CallerRunsActor
from toolcards.errors import RetriableError
from toolcards.metadata._models import FIELDS_MAX, TeamMetadata
from toolcards.store._base import Change, Store
from toolcards.store._mirror import NamespaceMirror

__all__ = ["METADATA_ACTOR_NAME", "MetadataActor", "MetadataProxy"]

METADATA_ACTOR_NAME = "#MetadataTool"
"""The actor's name in its team, and the last part of its store namespace."""
_FIELDS = "fields"
_TEXT = "text"


class MetadataActor(CallerRunsActor):
    """The metadata of one team; methods run one at a time, in the order sent.

    Args:
        team_id: The team; the namespace is ``f"{team_id}/#MetadataTool"``.
        store: Where the metadata is kept; it must outlive the actor.

    Raises:
        toolcards.store.StoreError: the namespace cannot be read (from the constructor).
    """

    def __init__(self, team_id: str, store: Store) -> None:
        super().__init__()
        self._mirror = NamespaceMirror(store, f"{team_id}/{METADATA_ACTOR_NAME}")
        self._state: TeamMetadata | None = None

    def metadata(self) -> TeamMetadata:
        """The metadata as committed, after catching up with the store (cheap when nothing changed).

        Raises:
            toolcards.store.StoreError: the store cannot be read.
        """
        if self._mirror.refresh() or self._state is None or self._state.version != self._mirror.version:
            self._state = self._snapshot()
        return self._state

    def update(self, fields: Mapping[str, str], text: str | None) -> TeamMetadata:
        """Set ``fields`` (an empty value removes one) and, unless ``None``, the notes (empty
        removes them); all or nothing, committed before it returns. Values must be checked by
        the caller (:mod:`toolcards.metadata._models`).

        Raises:
            RetriableError: the team would keep more than ``FIELDS_MAX`` fields; nothing changed.
            toolcards.store.StoreError: the write failed; nothing changed.
        """
        with self._mirror.write() as write:
            current = dict(self._mirror.rows.get(_FIELDS, {}))
            changes = [
                Change(collection=_FIELDS, key=name, value={"value": value} if value else None)
                for name, value in fields.items()
                if (current.get(name) or {}).get("value", "") != value
            ]
            kept = {name for name in current if name not in fields} | {name for name, value in fields.items() if value}
            if len(kept) > FIELDS_MAX:
                raise RetriableError(
                    f"The team would have {len(kept)} metadata fields; it keeps at most {FIELDS_MAX}. "
                    "Remove some (an empty value removes a field), or put longer text in the notes."
                )
            if text is not None:
                stored = (self._mirror.rows.get(_TEXT, {}).get(_TEXT) or {}).get("text", "")
                if stored != text:
                    changes.append(Change(collection=_TEXT, key=_TEXT, value={"text": text} if text else None))
            if changes:
                write.stage(changes)
        self._state = self._snapshot()
        return self._state

    def _snapshot(self) -> TeamMetadata:
        rows = self._mirror.rows.get(_FIELDS, {})
        text = (self._mirror.rows.get(_TEXT, {}).get(_TEXT) or {}).get("text", "")
        return TeamMetadata(
            fields={name: str(rows[name].get("value", "")) for name in sorted(rows)},
            text=str(text),
            version=self._mirror.version,
        )


class MetadataProxy(ActorMemberMixin, pykka.ActorProxy[MetadataActor]):
    """A typed proxy of :class:`MetadataActor`: each method returns a ``pykka.Future``."""

    metadata = proxy_method(MetadataActor.metadata)
    update = proxy_method(MetadataActor.update)
