"""A command line holding what no process argument can carry (a NUL, a lone surrogate) is
refused before anything starts, in words the model can act on, in the foreground and the
background, by the tool and by the actor used directly."""

from __future__ import annotations

import logging

import pytest

from tests.sandbox.conftest import StartSandbox, backend_class, run_via_proxy
from toolcards import ToolFactory
from toolcards.errors import RetriableError
from toolcards.sandbox import ExecTool
from toolcards.sandbox._guards import check_allowed
from toolcards.testing import FakeObserver


@pytest.mark.parametrize(
    ("cmd", "words"),
    [
        ("echo a\x00b", "holds a NUL character (character 7)"),
        ("\x00", "holds a NUL character (character 1)"),
        ("echo \ud800", "character 6 is the lone surrogate U+D800"),
        ("echo \udcff", "character 6 is the lone surrogate U+DCFF"),
    ],
)
def test_the_guard_refuses_what_no_command_line_can_carry(cmd: str, words: str) -> None:
    message = check_allowed(cmd, [])
    assert message is not None and message.startswith("SandboxError: ")
    assert words in message and "nothing was run" in message
    assert check_allowed(cmd, ["echo"]) == message  # before the allowlist is read


@pytest.mark.parametrize("mode", ["local", "bwrap"])
def test_a_nul_in_a_command_is_a_retriable_refusal_that_starts_no_run(
    mode: str, alice: FakeObserver, caplog: pytest.LogCaptureFixture
) -> None:
    backend_class(mode)
    card = ExecTool(mode=mode, allowed_commands=[], max_background_runs=1)
    factory = ToolFactory([card], observer=alice)
    tools = {tool.name: tool for tool in factory.tools()}
    with caplog.at_level(logging.ERROR):
        for background in (False, True):
            with pytest.raises(RetriableError, match="holds a NUL character") as refused:
                tools["exec_command"].call_sync({"cmd": "echo a\x00b", "background": background})
            assert "Remove it and retry" in str(refused.value)
    assert not caplog.records  # no traceback: nothing unexpected happened
    with pytest.raises(RetriableError, match="You have no background runs"):
        tools["exec_status"].call_sync({"run_id": "r1"})
    assert factory.get_system_prompts()[0]() is None  # no run in the context


def test_the_actor_refuses_it_too(sandbox: StartSandbox) -> None:
    result = run_via_proxy(sandbox(), "echo \ud800")
    assert result.refused and result.exit_code is None
    assert result.error is not None and "lone surrogate U+D800" in result.error
