"""A tool's unexpected exception is logged once: the tool, the type and the traceback, never
the message (it may quote the arguments or a file); the caller still reads the message."""

from __future__ import annotations

import logging

import pytest

from toolcards import RetriableError, Tool, ToolFailed
from toolcards.core._unexpected import traceback_without_messages

SECRET = "password=hunter2-canary"


def parse_settings(text: str) -> str:
    """Parse settings.

    Args:
        text: The settings.
    """
    try:
        return {"known": "yes"}[text]
    except KeyError as exc:
        raise ValueError(f"cannot parse {text!r}") from exc


def refuse(text: str) -> str:
    """Refuse.

    Args:
        text: Anything.
    """
    raise RetriableError(f"{text} was not found in the file")


def test_an_unexpected_exception_is_logged_once_with_its_traceback_and_without_its_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tool = Tool.from_function(parse_settings)
    with caplog.at_level(logging.DEBUG), pytest.raises(ToolFailed) as failed:
        tool.call_sync({"text": SECRET})
    assert SECRET in str(failed.value)  # the caller's answer keeps it
    (record,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    text = record.getMessage()
    assert record.levelno == logging.ERROR and record.exc_info is None
    assert text.startswith("tool parse_settings raised ValueError")
    assert "Traceback (most recent call last)" in text
    assert 'in parse_settings\n    return {"known": "yes"}[text]' in text
    assert "\nKeyError\n" in text and "direct cause" in text and text.endswith("\nValueError")
    assert SECRET not in text and "hunter2" not in text


def test_a_refusal_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    tool = Tool.from_function(refuse)
    with caplog.at_level(logging.DEBUG), pytest.raises(RetriableError):
        tool.call_sync({"text": SECRET})
    assert not any(SECRET in r.getMessage() or r.levelno >= logging.INFO for r in caplog.records)


def test_the_chain_is_printed_as_python_prints_it_but_for_the_messages() -> None:
    try:
        try:
            raise OSError(2, "No such file", f"/home/user/{SECRET}")
        except OSError:
            raise RuntimeError(SECRET) from None
    except RuntimeError as exc:
        suppressed = traceback_without_messages(exc)
    assert suppressed.count("Traceback") == 1 and suppressed.endswith("RuntimeError\n")
    try:
        try:
            raise OSError(SECRET)
        except OSError:
            raise RuntimeError(SECRET)  # noqa: B904  (the implicit context is what is shown)
    except RuntimeError as exc:
        implicit = traceback_without_messages(exc)
    assert "During handling of the above exception" in implicit and "\nOSError\n" in implicit
    assert SECRET not in suppressed + implicit
