"""An exception an actor answers an ask with is the caller's to report: the actor logs one DEBUG
line naming its type, never a traceback or the message (which may quote a file)."""

from __future__ import annotations

import logging

import pykka
import pytest

from toolcards.actors._caller_runs import CallerRunsActor
from toolcards.errors import RetriableError

SECRET = "api_key = sk-live-0f9e8d7c"


class Refusing:
    def refuse(self) -> None:
        raise RetriableError(f"old_string was not found; the closest line is:\n{SECRET}")

    def crash(self) -> None:
        raise KeyError(SECRET)


class PlainActor(Refusing, pykka.ThreadingActor):
    """Answered by pykka's own loop (as the orchestrator, members and the sandbox are)."""


class CallerRuns(Refusing, CallerRunsActor):
    """Answered by a waiting caller, or by its own loop when the caller waits with a timeout."""


def logged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name.startswith(("pykka", "toolcards"))]


@pytest.mark.parametrize("actor_class", [PlainActor, CallerRuns])
@pytest.mark.parametrize("timeout", [None, 10.0])
def test_a_refusal_returned_to_the_caller_is_one_debug_line_without_its_message(
    actor_class: type[pykka.ThreadingActor], timeout: float | None, caplog: pytest.LogCaptureFixture
) -> None:
    proxy = actor_class.start().proxy()
    with caplog.at_level(logging.DEBUG):
        for _ in range(3):
            with pytest.raises(RetriableError, match="closest line"):
                proxy.refuse().get(timeout=timeout)
        with pytest.raises(KeyError):
            proxy.crash().get(timeout=timeout)
    records = logged(caplog)
    assert [r.levelno for r in records if r.levelno >= logging.INFO] == []
    returned = [r.getMessage() for r in records if "to its caller" in r.getMessage()]
    assert len(returned) == 4 and "RetriableError" in returned[0] and "KeyError" in returned[3]
    assert all(r.exc_info is None and r.exc_text is None for r in records)
    assert not any(SECRET in r.getMessage() for r in records)


def test_what_else_pykka_logs_passes(caplog: pytest.LogCaptureFixture) -> None:
    ref = PlainActor.start()
    with caplog.at_level(logging.DEBUG, logger="pykka"):
        ref.tell({"unexpected": "message"})  # pykka warns about messages an actor does not handle
        ref.stop()
    assert any(r.name == "pykka" and r.levelno == logging.WARNING for r in caplog.records)
