"""Helpers of the hardening tests: an agent whose every answer is checked, envelopes, and
what hostile trees are made of.

:class:`CheckedAgent` calls the real ``WorkspaceTool`` through the factory and the pipeline,
like a model. Every refusal it gets (and every result) is checked on the spot: it must not
name a host path (the test's temporary directory, under which the tree and everything
outside it live) and must not be a raw exception in disguise (the pipeline turns an
unexpected exception into ``"<tool> failed: <Class>: ..."``). Every message is also kept
in :data:`MESSAGES`, so a test can walk them all.

:func:`answer_within` bounds a call in time; :func:`bound_unix_socket` and
:func:`renameat2_works` make and probe what a sandboxed command could leave in a tree.
"""

from __future__ import annotations

import ctypes
import os
import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolcards import TOOL_CALL, RetriableError, Tool, ToolFactory, ToolFailed
from toolcards.testing import FakeObserver
from toolcards.workspace._tool import WorkspaceTool

__all__ = [
    "MESSAGES",
    "CheckedAgent",
    "answer_within",
    "bound_unix_socket",
    "enveloped_parts",
    "outside_envelopes",
    "renameat2_works",
]

MESSAGES: list[str] = []
"""Every refusal any :class:`CheckedAgent` received in this test session."""

EVERY_TOOL: dict[str, Any] = {"workspace_mkdir": True, "workspace_rmdir": True}

_BEGIN = re.compile(r"^\[BEGIN UNTRUSTED ([0-9a-f]{8}) from [^\n]*\]$", re.MULTILINE)


class CheckedAgent:
    """One agent with every workspace tool; see the module docstring.

    Args:
        host: a host directory no message may name (the test's ``tmp_path``).
    """

    def __init__(self, observer: FakeObserver, host: Path, **card: Any) -> None:
        self.factory = ToolFactory([WorkspaceTool(**{**EVERY_TOOL, **card})], observer=observer)
        self.tools: dict[str, Tool] = {tool.name: tool for tool in self.factory.tools()}
        self.root: Path = self.factory.cards[0].root  # type: ignore[attr-defined]
        self.host = str(host)
        self.real_host = str(host.resolve())
        self.calls = 0

    def __call__(self, name: str, **args: Any) -> Any:
        """The result of a call that must succeed (checked like a refusal)."""
        result = self.tools[name].call_sync(args, channel=TOOL_CALL)
        self.calls += 1
        if isinstance(result, str):
            self.check(name, result)
        return result

    def attempt(self, name: str, **args: Any) -> tuple[Any, str | None]:
        """``(result, None)`` or ``(None, message)`` of a refusal; anything else raises."""
        try:
            return self(name, **args), None
        except (RetriableError, ToolFailed) as exc:
            self.calls += 1
            message = str(exc)
            self.check(name, message)
            MESSAGES.append(message)
            return None, message

    def refused(self, name: str, **args: Any) -> str:
        """The message of a call that must be refused."""
        result, message = self.attempt(name, **args)
        assert message is not None, f"{name}({args}) was not refused: {result!r}"
        return message

    def bounded(self, name: str, seconds: float = 30.0, **args: Any) -> tuple[Any, str | None]:
        """:meth:`attempt` in a thread; fails the test when it does not return in ``seconds``."""
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["value"] = self.attempt(name, **args)
            except BaseException as exc:  # reported in the test's thread
                outcome["error"] = exc

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(seconds)
        assert not thread.is_alive(), f"{name}({args}) blocked for more than {seconds:g} s"
        if "error" in outcome:
            raise outcome["error"]
        value: tuple[Any, str | None] = outcome["value"]
        return value

    def check(self, tool: str, message: str) -> None:
        assert self.host not in message and self.real_host not in message, f"{tool} named a host path: {message}"
        assert not message.startswith(f"{tool} failed: "), f"{tool} raised a raw exception: {message}"


def enveloped_parts(message: str) -> list[str]:
    """The texts inside the untrusted-output envelopes of ``message``, in order.

    Each envelope must be closed by the one line ending it (same boundary), and no other
    line inside may look like an envelope marker: a forged marker in the data shows up
    escaped, so the data cannot close the envelope or open another.
    """
    parts = []
    for match in _BEGIN.finditer(message):
        boundary = match[1]
        end = message.index(f"\n[END UNTRUSTED {boundary}]", match.end())
        inside = message[match.end() + 1 : end]
        for line in inside.split("\n"):
            assert not re.match(r"(?i)\[\s*(begin|end)\s+untrusted\s+output", line), f"a marker got through: {line}"
        parts.append(inside)
    return parts


def outside_envelopes(message: str) -> str:
    """``message`` without its envelopes: what the model reads as the tool's own words."""
    out = message
    for match in list(_BEGIN.finditer(message))[::-1]:
        end_marker = f"\n[END UNTRUSTED {match[1]}]"
        end = message.index(end_marker, match.end()) + len(end_marker)
        out = out[: match.start()] + out[end:]
    return out


def answer_within(seconds: float, call: Callable[[], str]) -> str:
    """``call()``'s result, or ``"error: ..."`` for a RetriableError; fails if it takes longer."""
    outcome: list[str] = []

    def run() -> None:
        try:
            outcome.append(call())
        except RetriableError as exc:
            outcome.append(f"error: {exc}")
        except BaseException as exc:  # reported below, as the test's failure
            outcome.append(f"raised {type(exc).__name__}: {exc}")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"no answer within {seconds} s"
    assert not outcome[0].startswith("raised"), outcome[0]
    return outcome[0]


def bound_unix_socket(directory: Path, name: str) -> socket.socket:
    """A unix socket bound at ``directory / name``; the caller closes it.

    Bound by a relative name from inside ``directory``, as socket paths are limited to 108 bytes.
    """
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    here = os.getcwd()
    os.chdir(directory)
    try:
        server.bind(name)
    finally:
        os.chdir(here)
    return server


def renameat2_works(tmp_path: Path) -> bool:
    """Whether ``renameat2(RENAME_EXCHANGE)`` swaps a directory and a symlink here."""
    libc = ctypes.CDLL(None, use_errno=True)
    (tmp_path / "probe_a").mkdir()
    (tmp_path / "probe_b").symlink_to("probe_a")
    a, b = bytes(tmp_path / "probe_a"), bytes(tmp_path / "probe_b")
    function = getattr(libc, "renameat2", None)
    done = function(-100, a, -100, b, 2) if function is not None else libc.syscall(316, -100, a, -100, b, 2)
    return bool(done == 0 and (tmp_path / "probe_a").is_symlink())
