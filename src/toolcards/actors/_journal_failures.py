"""Reporting a team's event log that fails: one line when it starts, one when it works again.

The event log is written after the work it records: a tool call's record is appended once the
call has answered, in a batch, when the process stops at the latest. When the store holding
the log cannot take it (a full disk, a read-only file system, a damaged file), the calls
themselves have succeeded, and the events still reach this process's subscribers; only the log
(other processes, dashboards, later readers) misses them. That is worth one line on stderr
saying what was not written, where and why, not a traceback for every batch after an answer
was printed.

So an expected failure (a :class:`~toolcards.errors.ToolcardsError` such as ``StoreError``,
whose message names the store, the namespace and the OS's or the database's reason, or an
``OSError``) is logged once, at ERROR, as one line; while the log keeps failing, further
failures are DEBUG lines; the first success after them is an INFO line. ``--debug`` (a DEBUG
level) adds the traceback to the first line. Anything else is a bug, logged with its
traceback every time. Reading and writing are followed separately.
"""

from __future__ import annotations

import logging

from toolcards.errors import ToolcardsError

__all__ = ["JournalFailures"]

logger = logging.getLogger("toolcards.actors")


class JournalFailures:
    """The failures of one team's event log, reported as the module docstring says.

    Called from the orchestrator's thread only.
    """

    def __init__(self, team_id: str) -> None:
        self.team_id = team_id
        self._lost: int | None = None
        """Events not written since writing started failing; ``None`` while it works."""
        self._reading_fails = False

    def write_failed(self, count: int, exc: Exception) -> None:
        """Writing ``count`` events failed with ``exc``."""
        events = f"{count} event{'s' if count != 1 else ''}"
        if not _expected(exc):
            logger.exception("team %s: writing %s to the event log failed", self.team_id, events)
            return
        if self._lost is not None:
            self._lost += count
            logger.debug("team %s: writing %s to the event log failed again: %s", self.team_id, events, _line(exc))
            return
        self._lost = count
        logger.error(
            "team %s: %s could not be written to the event log; other processes and dashboards will miss %s, "
            "and further failures are not repeated until a write succeeds: %s",
            self.team_id,
            events,
            "it" if count == 1 else "them",
            _line(exc),
            exc_info=exc if logger.isEnabledFor(logging.DEBUG) else None,
        )

    def write_worked(self) -> None:
        """A write succeeded."""
        if self._lost is not None:
            logger.info(
                "team %s: the event log is written again; %d events were not written to it", self.team_id, self._lost
            )
            self._lost = None

    def read_failed(self, exc: Exception) -> None:
        """Reading the log (for other processes' events) failed with ``exc``."""
        if not _expected(exc):
            logger.exception("team %s: reading the event log failed", self.team_id)
            return
        if self._reading_fails:
            logger.debug("team %s: reading the event log failed again: %s", self.team_id, _line(exc))
            return
        self._reading_fails = True
        logger.error(
            "team %s: reading the event log failed, so other processes' events are not seen here until it "
            "can be read: %s",
            self.team_id,
            _line(exc),
            exc_info=exc if logger.isEnabledFor(logging.DEBUG) else None,
        )

    def read_worked(self) -> None:
        """A read succeeded."""
        if self._reading_fails:
            logger.info("team %s: the event log can be read again", self.team_id)
            self._reading_fails = False


def _expected(exc: Exception) -> bool:
    return isinstance(exc, ToolcardsError | OSError)


def _line(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
