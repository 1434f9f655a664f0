"""Background run numbers from the team's store, so a run id never names two runs of a team.

A model continuing a conversation after a restart (``message_history``, an MCP client across a
server restart) still holds the ids it was given; numbering from 1 again would let
``exec_stop r1`` stop a newer run. Each number is one write to the store's namespace
``"<team_id>/#SandboxActor"``, holding its lock: the row ``runs/last`` plus one, so numbers are
unique across restarts and across the processes and hosts that share the store.

The namespace also holds the records of keyed commands (:mod:`toolcards.sandbox._command_calls`),
so its version moves on faster than the numbers; each writer's first write (at version 0)
stages ``runs/last`` too (:func:`first_rows`). A missing row therefore means the namespace was
dropped, and numbers go on from the version of the write that finds it missing: versions only
grow, and each number given before is at most the version its own write committed as.
"""

from __future__ import annotations

from toolcards.store._base import Change, JSONValue, Snapshot, Store

__all__ = ["RUN_NUMBERS_NAMESPACE", "StoredRunNumbers", "first_rows"]

RUN_NUMBERS_NAMESPACE = "{team_id}/#SandboxActor"
"""The store namespace of a team's run numbers (row ``runs/last``: the last number given)."""

_RUNS, _LAST = "runs", "last"


def first_rows(version: int) -> list[Change]:
    """What another writer of the namespace stages besides its rows when it writes at
    ``version``: at version 0 (its first write ever), the row saying no number was given yet,
    so the team's first run is still ``r1``; nothing otherwise."""
    return [Change(collection=_RUNS, key=_LAST, value=0)] if version == 0 else []


class StoredRunNumbers:
    """Calls return the next run number of a team; thread-safe (the store is)."""

    def __init__(self, store: Store, team_id: str) -> None:
        """``store`` must outlive the sandbox (the process's default store does)."""
        self.store = store
        self.namespace = RUN_NUMBERS_NAMESPACE.format(team_id=team_id)

    def __call__(self) -> int:
        """Commit and return the next number. Blocks for two reads and one store write
        (waiting for another process's write to the namespace, if one holds its lock).

        Raises:
            toolcards.errors.StoreError: a read or the write failed; no number was given.
        """
        store, namespace = self.store, self.namespace
        # A read inside the write would wait for the lock the write holds: read first, then
        # catch up, inside the write, with what was committed after the version read.
        version = store.version(namespace)
        last: JSONValue = store.get(namespace, _RUNS, [_LAST]).get(_LAST)
        with store.write(namespace, since=version) as txn:
            catch_up = txn.catch_up
            if isinstance(catch_up, Snapshot):
                last = catch_up.rows.get(_RUNS, {}).get(_LAST)
            elif catch_up is not None:
                last = next((c.value for c in catch_up.changes if (c.collection, c.key) == (_RUNS, _LAST)), last)
            number = last + 1 if isinstance(last, int) and not isinstance(last, bool) else txn.version + 1
            txn.stage([Change(collection=_RUNS, key=_LAST, value=number)])
        # Returned once the block has committed it (a failed commit raises instead).
        return number
