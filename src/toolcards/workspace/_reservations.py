"""Paths reserved by other members' claimed tasks: what a workspace write checks first.

A task may reserve workspace globs (``paths``) for whoever claims it; while the claim holds,
a write by another member to a matching path is refused, naming the holder, the task and how
to coordinate, or goes through with that warning (the claiming card's ``reservations``
setting). The board lists the reservations through the team's ``"path_reservations"``
service (this package does not import the planning board); the globs are matched here, with
the workspace's own glob rules (:func:`~toolcards.workspace._glob.glob_regex`), so a
reservation means what the same pattern means to ``workspace_glob``.

What is covered: every workspace tool that changes files (write, edit, multi-edit, patch,
delete, mkdir, rmdir, move). What is not: commands run by ``exec_command`` (a sandboxed shell
writes wherever its command says; nothing stops it at the file), and a process of the team
that has no planning card (it has no board to ask).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Literal

from toolcards.core._events import ToolcardsEvent
from toolcards.core._services import PATH_RESERVATIONS
from toolcards.errors import RetriableError
from toolcards.workspace._glob import glob_regex

__all__ = ["ReservationRefused", "check_reservations"]

logger = logging.getLogger(__name__)


class ReservationRefused(ToolcardsEvent):
    """A workspace write met a path another member's claimed task reserves."""

    kind: Literal["reservation_refused"] = "reservation_refused"
    member: str
    """Who tried to write."""
    path: str
    holder: str
    task_id: int
    pattern: str
    mode: str
    """``refuse`` (the write did not happen) or ``warn`` (it did, with a warning)."""


def check_reservations(team: Any, member: str, paths: Iterable[str], *, tool: str) -> str:
    """Check ``member``'s write of ``paths`` (workspace-relative) against other members' reservations.

    Returns ``""`` when nothing is reserved, or the warning to add to the tool's answer for
    reservations in ``warn`` mode. Publishes a :class:`ReservationRefused` event per path met.

    Raises:
        RetriableError: a path is reserved in ``refuse`` mode; the message names the path, the
            holder, its task, and how to coordinate. Nothing was written.
    """
    service = team.service(PATH_RESERVATIONS) if team is not None else None
    if service is None:
        return ""
    wanted = [path.strip("/") for path in paths if path]
    if not wanted:
        return ""
    reservations = service(member)
    if not reservations:
        return ""
    met: list[tuple[str, str, int, str, str]] = []
    for pattern, holder, task_id, mode in reservations:
        try:
            matches = glob_regex([pattern]).fullmatch
        except RetriableError:
            continue  # a pattern the board accepted but the workspace cannot read reserves nothing
        met += [(path, holder, task_id, pattern, mode) for path in wanted if matches(path)]
    if not met:
        return ""
    for path, holder, task_id, pattern, mode in met:
        try:
            team.publish(
                ReservationRefused(
                    team_id=getattr(team, "team_id", ""),
                    member=member,
                    path=path,
                    holder=holder,
                    task_id=task_id,
                    pattern=pattern,
                    mode=mode,
                )
            )
        except Exception:
            logger.debug("publishing a reservation refusal failed", exc_info=True)
    refused = [entry for entry in met if entry[4] == "refuse"]
    if refused:
        path, holder, task_id, pattern, _ = refused[0]
        raise RetriableError(
            f"{tool} was not applied: {path} is reserved by {holder} for task {task_id} ({pattern}) while "
            f"{holder} holds it. Work on other files, or message {holder} to coordinate; the reservation ends "
            "when the task is completed or released."
        )
    lines = [f"{path} is reserved by {holder} for task {task_id} ({pattern})" for path, holder, task_id, _, _ in met]
    return "Warning: " + "; ".join(lines) + f". Tell {met[0][1]} what you changed."
