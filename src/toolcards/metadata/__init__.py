"""Team metadata: the business context every member reads, from the config and the team's store.

* :mod:`~toolcards.metadata._models` — :class:`TeamMetadata` and the bounds of fields and notes.
* :mod:`~toolcards.metadata._actor` — :class:`MetadataActor`, one per team, which keeps the
  metadata in ``"<team>/#MetadataTool"``.
* :mod:`~toolcards.metadata._render` — the block a model reads.
* :mod:`~toolcards.metadata._tool` — :class:`MetadataTool`, the card: ``team_metadata`` in the
  context, the ``set_metadata`` command.
"""

from __future__ import annotations

from toolcards.metadata._actor import METADATA_ACTOR_NAME, MetadataActor, MetadataProxy
from toolcards.metadata._models import (
    FIELD_NAME_PATTERN,
    FIELDS_MAX,
    TEXT_MAX,
    VALUE_MAX,
    TeamMetadata,
    field_name_problem,
    value_problem,
)
from toolcards.metadata._render import render_metadata
from toolcards.metadata._tool import MetadataTool, SetMetadataParam, TeamMetadataParam

__all__ = [
    "FIELDS_MAX",
    "FIELD_NAME_PATTERN",
    "METADATA_ACTOR_NAME",
    "TEXT_MAX",
    "VALUE_MAX",
    "MetadataActor",
    "MetadataProxy",
    "MetadataTool",
    "SetMetadataParam",
    "TeamMetadata",
    "TeamMetadataParam",
    "field_name_problem",
    "render_metadata",
    "value_problem",
]
