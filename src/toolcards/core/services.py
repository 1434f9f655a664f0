"""The services one card offers another through the team handle, and what calling them means.

Domain packages never import each other; when one needs another's actor (the workspace
checking the paths a claimed task reserves, the board telling a task's owner it became
ready), the owning card offers a callable on the team handle
(:meth:`toolcards.actors.TeamHandle.provide`) and the other looks it up by name
(:meth:`~toolcards.actors.TeamHandle.service`), getting ``None`` when no card of this
process offers it. The names and contracts live here, below both.
"""

from __future__ import annotations

__all__ = ["CLAIMED_TASK", "MAILBOX", "PATH_RESERVATIONS"]

PATH_RESERVATIONS = "path_reservations"
"""``service(member) -> [(glob, holder, task_id, mode), ...]``: the workspace globs reserved by
live claims of members other than ``member`` (``@Name``); ``mode`` is ``"refuse"`` or
``"warn"``. Offered by the planning card; may block briefly (an actor ask)."""

MAILBOX = "mailbox"
"""``service(to, text, sender=...)``: leave ``text`` in member ``to``'s mailbox (``@Name``).
Offered by the messaging card; may block briefly; raises ``RetriableError`` for an unknown
recipient or a full mailbox."""

CLAIMED_TASK = "claimed_task"
"""``service(member) -> int | None``: the id of the task member ``member`` (``@Name``) holds by a
live claim (the latest claimed when it holds several), or ``None``. Offered by the planning
card; may block briefly (an actor ask). The knowledge graph records it with every fact."""
