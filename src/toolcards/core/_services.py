"""The services one card offers another through the team handle, and what calling them means.

Domain packages never import each other; when one needs another's actor (the workspace
checking the paths a claimed task reserves, the board telling a task's owner it became
ready), the owning card offers a callable on the team handle
(:meth:`toolcards.actors.TeamHandle.provide`) and the other looks it up by name
(:meth:`~toolcards.actors.TeamHandle.service`), getting ``None`` when no card of this
process offers it. The names and contracts live here, below both.
"""

from __future__ import annotations

__all__ = [
    "CLAIMED_TASK",
    "MAILBOX",
    "PATH_RESERVATIONS",
    "SPILL_SERVICES",
    "SPILL_TO_STORE",
    "SPILL_TO_WORKSPACE",
    "WORKSPACE_COMMANDS",
]

PATH_RESERVATIONS = "path_reservations"
"""``service(member) -> [(glob, holder, task_id, mode), ...]``: the workspace globs reserved by
live claims of members other than ``member`` (``@Name``); ``mode`` is ``"refuse"`` or
``"warn"``. Offered by the planning card; may block briefly (an actor ask)."""

MAILBOX = "mailbox"
"""``service(to, text, sender=...)``: leave ``text`` in the durable mailbox of member ``to``
(``@Name``; a role reaches each of its members), wherever in the team it runs. Offered by the
messaging card; may block briefly (a store write); raises ``RetriableError`` for a recipient
that is not a live member of the team, or a full mailbox."""

SPILL_TO_WORKSPACE = "spill_to_workspace"
"""A :class:`~toolcards.core._spill.SpillSink` keeping outputs over a tool's budget as files of
the team's workspace, read back with ``workspace_read``. Offered by the workspace card; blocks
on a file write."""

SPILL_TO_STORE = "spill_to_store"
"""A :class:`~toolcards.core._spill.SpillSink` keeping outputs over a tool's budget in the
team's store, read back with ``read_spilled_output``. Offered by the spilled-output card;
blocks on store writes."""

SPILL_SERVICES = (SPILL_TO_WORKSPACE, SPILL_TO_STORE)
"""The spill services, in the order the pipeline tries them for each call."""

CLAIMED_TASK = "claimed_task"
"""``service(member) -> int | None``: the id of the task ``member`` (``@Name``) holds a live
claim on (the most recently claimed, when several), or ``None``. Offered by the planning
card; the workspace journal records it with each change, the ledger counts each call
against it, the knowledge graph records it with every fact. May block briefly (an actor ask)."""

WORKSPACE_COMMANDS = "workspace_commands"
"""``service(root, member, command, timeout_s) -> context manager``: run a sandboxed command
inside the ``with`` block, and the workspace journal of the tree at ``root`` (a
:class:`~pathlib.Path`) scans it before and after, recording what the command changed as
``member``'s ``exec_command``. Offered by the workspace card; a tree without a journal gets
a block that does nothing. Entering and leaving block for a scan of the tree (a ``stat`` per
file; the first scan of a tree reads every file once). Never raises for the journal's own
failures (they are logged): the command runs anyway."""
