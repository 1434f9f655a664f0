"""The staging half of a write, shared by every store: rows encoded as they are staged.

A store's ``write`` takes the lock, fills in :attr:`version` and :attr:`catch_up`, yields a
:class:`StagedWrite`, then writes :attr:`StagedWrite.staged` as version ``version + 1`` and
calls :meth:`StagedWrite.finish`.
"""

from __future__ import annotations

from collections.abc import Iterable

from toolcards.errors import StoreError
from toolcards.store._base import CatchUp, Change, Transaction
from toolcards.store._codec import EncodedChanges, encode_changes

__all__ = ["StagedWrite"]


class StagedWrite(Transaction):
    """A :class:`~toolcards.store.Transaction` that keeps its staged rows as JSON text."""

    def __init__(self, namespace: str, version: int, catch_up: CatchUp | None) -> None:
        self.namespace = namespace
        self.version = version
        self.catch_up = catch_up
        self.committed = None
        self.staged: EncodedChanges = {}
        """``(collection, key)`` → JSON text, or ``None`` for a delete; last staged wins."""
        self._open = True

    def __repr__(self) -> str:
        state = "open" if self._open else f"committed as {self.committed}" if self.committed else "closed"
        return f"<Transaction {self.namespace!r} at version {self.version}, {len(self.staged)} staged, {state}>"

    def stage(self, changes: Iterable[Change]) -> int:
        """Encode ``changes`` and add them to this write; returns ``version + 1``."""
        if not self._open:
            raise StoreError(
                f"The write to {self.namespace!r} is over; stage changes inside its `with store.write(...)` block."
            )
        self.staged.update(encode_changes(self.namespace, changes))
        return self.version + 1

    def finish(self, *, committed: bool) -> None:
        """Close the transaction; ``committed`` says whether the staged rows were written."""
        self._open = False
        self.committed = self.version + 1 if committed and self.staged else None
