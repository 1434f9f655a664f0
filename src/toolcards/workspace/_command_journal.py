"""Sandboxed commands in the workspace journal: the ``workspace_commands`` team service.

The sandbox card runs each ``exec_command`` inside the block this service gives (see
:data:`toolcards.core._services.WORKSPACE_COMMANDS`; the sandbox does not import this
package). Entering it scans the tree, so what changed before the command is not taken for
its work, and registers the command as running in the journal's index, where every process
serving the tree sees it; leaving it scans again and records what changed as the command's
change (:meth:`~toolcards.workspace._actor.WorkspaceActor.command_started`,
:meth:`~toolcards.workspace._actor.WorkspaceActor.command_ended`). Both run on the tree's
actor, holding the tree's lock.

The journal's failures never stop a command: a scan that fails is logged, and what the
command changed is recorded at the next scan that succeeds (as ``outside`` if the command
is over by then).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from toolcards.actors._asking import ask
from toolcards.core._services import CLAIMED_TASK
from toolcards.workspace._actor import WorkspaceHub, existing_hub
from toolcards.workspace._journal import Author

__all__ = ["claimed_task", "journal_command"]

logger = logging.getLogger(__name__)


def journal_command(team: Any, root: Path, member: str, command: str, timeout_s: float) -> AbstractContextManager[None]:
    """The ``workspace_commands`` service of ``team``: a block to run ``command`` in.

    ``root`` is the tree the command runs in, ``member`` who runs it (``@Name``) and
    ``timeout_s`` its deadline. A tree this process keeps no journal of gets a block that
    does nothing.
    """
    hub = existing_hub(root)
    if hub is None or hub.journal is None:
        return contextlib.nullcontext()
    return _journaled(hub, team, member, command, timeout_s)


def claimed_task(team: Any, member: str) -> int | None:
    """The task ``member`` holds a claim on, asked of the board through the team's
    ``claimed_task`` service (``None`` without a planning card here, or when it fails)."""
    service = team.service(CLAIMED_TASK) if team is not None else None
    if service is None:
        return None
    try:
        task = service(member)
    except Exception:
        logger.debug("claimed_task failed for %s", member, exc_info=True)
        return None
    return task if isinstance(task, int) else None


@contextlib.contextmanager
def _journaled(hub: WorkspaceHub, team: Any, member: str, command: str, timeout_s: float) -> Iterator[None]:
    name = f"#WorkspaceActor:{hub.root.name}"
    author = Author(member=member, team=str(getattr(team, "team_id", "")), task_id=claimed_task(team, member))
    running = None
    try:
        running = ask(hub.actor().command_started(author, command, timeout_s), actor=name)
    except Exception:
        logger.warning("The workspace journal could not scan %s before a command", hub.root.name, exc_info=True)
    try:
        yield
    finally:
        if running is not None:
            try:
                ask(hub.actor().command_ended(running), actor=name)
            except Exception:
                logger.warning("The workspace journal could not scan %s after a command", hub.root.name, exc_info=True)
