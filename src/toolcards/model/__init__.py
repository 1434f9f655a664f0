"""Switching models: a member picks what it runs on from a roster, kept in the team's store.

* :mod:`~toolcards.model._models` — :class:`ModelOption` (a roster entry: a pydantic-ai model
  string or a factory, and a description) and :class:`ActiveModel` (a member's choice).
* :mod:`~toolcards.model._actor` — :class:`ModelChoiceActor`, one per team, which keeps every
  member's choice in ``"<team>/#ModelTool"``.
* :mod:`~toolcards.model._tool` — :class:`ModelTool`, the card: ``current_model``,
  ``list_models``, ``switch_model``; the choice reaches requests through
  ``toolcards.pydantic_ai.ModelSwitch``.
"""

from __future__ import annotations

from toolcards.model._actor import ModelChoiceProxy
from toolcards.model._models import ActiveModel, ModelName, ModelOption
from toolcards.model._tool import CurrentModelParam, ListModelsParam, ModelTool, SwitchModelParam

__all__ = [
    "ActiveModel",
    "CurrentModelParam",
    "ListModelsParam",
    "ModelChoiceProxy",
    "ModelName",
    "ModelOption",
    "ModelTool",
    "SwitchModelParam",
]
