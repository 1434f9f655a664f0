"""Background run numbers from the team's store, so a run id never names two runs of a team.

A model continuing a conversation after a restart (``message_history``, an MCP client across a
server restart) still holds the ids it was given; numbering from 1 again would let
``exec_stop r1`` stop a newer run. Each number is one write to the store's namespace
``"<team_id>/#SandboxActor"``: the version that write commits as is the number. A namespace's
version only grows (a drop included) and two writers never commit the same one, so numbers are
unique across restarts and across the processes and hosts that share the store.
"""

from __future__ import annotations

from toolcards.store._base import Change, Store

__all__ = ["RUN_NUMBERS_NAMESPACE", "StoredRunNumbers"]

RUN_NUMBERS_NAMESPACE = "{team_id}/#SandboxActor"
"""The store namespace of a team's run numbers (one row: the last number given)."""


class StoredRunNumbers:
    """Calls return the next run number of a team; thread-safe (the store is)."""

    def __init__(self, store: Store, team_id: str) -> None:
        """``store`` must outlive the sandbox (the process's default store does)."""
        self.store = store
        self.namespace = RUN_NUMBERS_NAMESPACE.format(team_id=team_id)

    def __call__(self) -> int:
        """Commit and return the next number. Blocks for one store write (waiting for another
        process's write to the namespace, if one holds its lock).

        Raises:
            toolcards.errors.StoreError: the write failed; no number was given.
        """
        with self.store.write(self.namespace, since=None) as txn:
            # Returned once the block has committed it (a failed commit raises instead).
            return txn.stage([Change(collection="runs", key="last", value=txn.version + 1)])
