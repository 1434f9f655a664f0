"""``ModelChoiceActor``: the model each member of a team chose, one actor per team.

The choices live in the store namespace ``"<team_id>/#ModelTool"``, one row per member
(collection ``active``, keyed by the member's name), so a choice survives a restart and every
process of the team sees it: a read first asks the store whether anything changed (one cheap
call), a switch is written under the namespace's lock before it is acknowledged.
"""

from __future__ import annotations

import time

import pykka
from pykka.typing import ActorMemberMixin, proxy_method

from toolcards.actors._caller_runs import CallerRunsActor
from toolcards.model._models import ActiveModel
from toolcards.store._base import Change, Store
from toolcards.store._mirror import NamespaceMirror

__all__ = ["MODEL_ACTOR_NAME", "ModelChoiceActor", "ModelChoiceProxy"]

MODEL_ACTOR_NAME = "#ModelTool"
"""The actor's name in its team, and the last part of its store namespace."""
_ACTIVE = "active"


class ModelChoiceActor(CallerRunsActor):
    """The models a team's members chose; methods run one at a time, in the order sent.

    Args:
        team_id: The team; the namespace is ``f"{team_id}/#ModelTool"``.
        store: Where the choices are kept; it must outlive the actor.

    Raises:
        toolcards.store.StoreError: the namespace cannot be read (from the constructor, so to
            whoever starts the actor).
    """

    def __init__(self, team_id: str, store: Store) -> None:
        super().__init__()
        self._mirror = NamespaceMirror(store, f"{team_id}/{MODEL_ACTOR_NAME}")

    def active(self, member: str) -> str | None:
        """The roster name ``member`` chose last, after catching up with the store; ``None``: none.

        Raises:
            toolcards.store.StoreError: the store cannot be read.
        """
        self._mirror.refresh()
        row = self._mirror.rows.get(_ACTIVE, {}).get(member.lower())
        return ActiveModel.model_validate(row).choice if row is not None else None

    def switch(self, member: str, choice: str | None) -> str | None:
        """Record that ``member`` runs on ``choice`` (``None``: forget its choice); returns the
        choice before. Committed before it returns; nothing is written when it does not change.

        Raises:
            toolcards.store.StoreError: the write failed; nothing changed.
        """
        key = member.lower()
        with self._mirror.write() as write:
            row = self._mirror.rows.get(_ACTIVE, {}).get(key)
            previous = ActiveModel.model_validate(row).choice if row is not None else None
            if previous != choice:
                value = None if choice is None else ActiveModel(choice=choice, at=time.time()).model_dump()
                write.stage([Change(collection=_ACTIVE, key=key, value=value)])
        return previous


class ModelChoiceProxy(ActorMemberMixin, pykka.ActorProxy[ModelChoiceActor]):
    """A typed proxy of :class:`ModelChoiceActor`: each method returns a ``pykka.Future``."""

    active = proxy_method(ModelChoiceActor.active)
    switch = proxy_method(ModelChoiceActor.switch)
