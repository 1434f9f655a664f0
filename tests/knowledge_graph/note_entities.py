"""Entities of numbered notes for the index's vector tests: ``entity n`` with ``observations``
observations, all recorded at :data:`T0`."""

from __future__ import annotations

from datetime import UTC, datetime

from toolcards.knowledge_graph._models import Entity

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entity(n: int, observations: int = 2) -> Entity:
    """``entity n`` (type ``note``) with observations ``n.0`` … ``n.<observations - 1>``."""
    return Entity.model_validate(
        {
            "name": f"entity {n}",
            "entity_type": "note",
            "created_at": T0,
            "observations": [
                {"id": f"{n}.{k}", "text": f"note {n} {k}", "created_at": T0} for k in range(observations)
            ],
        }
    )
