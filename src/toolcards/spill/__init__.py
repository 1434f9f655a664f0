"""Tool outputs too long for their answer, kept whole in the team's store.

:class:`SpilledOutputTool` offers the store as the place to keep them for a team without a
workspace card, and ``read_spilled_output`` to read them back; :class:`StoredSpills` keeps
them (:mod:`toolcards.spill._stored`). How the pipeline spills is :mod:`toolcards.core._spill`.
"""

from __future__ import annotations

from toolcards.spill._stored import StoredSpills, stored_spills
from toolcards.spill._tool import ReadSpilledOutputParam, SpilledOutputTool

__all__ = ["ReadSpilledOutputParam", "SpilledOutputTool", "StoredSpills", "stored_spills"]
