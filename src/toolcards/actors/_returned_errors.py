"""An exception an actor returns to its caller is the caller's to report, not the actor's to log.

pykka logs every exception an ask answers with, at INFO and with its traceback ("Exception
returned from ... to caller:"). For toolcards most of those are refusals a model is meant to
read and act on: a stale edit, an edit whose old text is not in the file, an unknown task id.
Logged, they filled a busy server's stderr with tracebacks (1,874 in 90 s, 3 MB) carrying
their messages, which quote the workspace's files, secrets included.

So an actor logs nothing of what it returns but one DEBUG line naming the actor and the
exception's type, never its message. The caller decides: the tool pipeline hands a refusal to
the model and logs an unexpected exception once, with its traceback and without its message
(:mod:`toolcards.core._unexpected`); other callers raise it on.

* :func:`log_returned` is that line, for actors that run their own loop
  (:class:`~toolcards.actors._caller_runs.CallerRunsActor`);
* :class:`ReturnedErrorFilter`, attached to the ``pykka`` logger when this module is imported
  (the runtime imports it with its first actor class), replaces pykka's own record for every
  other actor (the orchestrator, team members, the sandbox). It drops nothing else pykka logs.
"""

from __future__ import annotations

import logging

__all__ = ["ReturnedErrorFilter", "log_returned"]

logger = logging.getLogger("toolcards.actors")

_PYKKA_PREFIX = "Exception returned from "
_PYKKA_SUFFIX = " to caller:"


def log_returned(actor: object, exc: BaseException) -> None:
    """The one line logged when ``actor`` answers an ask with ``exc``: DEBUG, type only."""
    logger.debug("%s returned %s to its caller", actor, type(exc).__name__)


class ReturnedErrorFilter(logging.Filter):
    """Turns pykka's "Exception returned from <actor> to caller:" record into :func:`log_returned`'s line.

    Attached to the ``pykka`` logger, it sees only what pykka logs itself; every other record
    passes unchanged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """``False`` (drop) for pykka's record of a returned exception, after logging its one line."""
        message = record.msg
        if not (isinstance(message, str) and message.startswith(_PYKKA_PREFIX) and record.exc_info):
            return True
        exc = record.exc_info[1]
        if exc is not None:
            log_returned(message.removeprefix(_PYKKA_PREFIX).removesuffix(_PYKKA_SUFFIX), exc)
        return False


def _attach() -> None:
    pykka_logger = logging.getLogger("pykka")
    if not any(isinstance(existing, ReturnedErrorFilter) for existing in pykka_logger.filters):
        pykka_logger.addFilter(ReturnedErrorFilter())


_attach()
