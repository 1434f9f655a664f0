"""Team metadata: the business context every member reads, from the config and the team's store.

* :mod:`~toolcards.metadata._models` — :class:`TeamMetadata` and the bounds of fields and notes.
* :mod:`~toolcards.metadata._actor` — :class:`MetadataActor`, one per team, which keeps the
  metadata in ``"<team>/#MetadataTool"``.
* :mod:`~toolcards.metadata._render` — the block a model reads.
* :mod:`~toolcards.metadata._tool` — :class:`MetadataTool`, the card: ``team_metadata`` in the
  context, the ``set_metadata`` command.
"""

from __future__ import annotations

from toolcards.metadata._actor import MetadataProxy
from toolcards.metadata._models import (
    FIELDS_MAX,
    TEXT_MAX,
    VALUE_MAX,
    TeamMetadata,
)
from toolcards.metadata._tool import MetadataTool, SetMetadataParam, TeamMetadataParam

__all__ = [
    "FIELDS_MAX",
    "TEXT_MAX",
    "VALUE_MAX",
    "MetadataProxy",
    "MetadataTool",
    "SetMetadataParam",
    "TeamMetadata",
    "TeamMetadataParam",
]
