"""ExecTool through the factory: one sandbox per team, strings not exceptions, real runs."""

from __future__ import annotations

import json

import pytest

from toolcards import ToolFactory, WiringError, dump_cards, load_cards
from toolcards.core.settings import workspace_dir
from toolcards.sandbox.models import ExecLimits
from toolcards.sandbox.tool import ExecCommand, ExecTool
from toolcards.testing import FakeObserver


def command(card: ExecTool, observer: FakeObserver):  # type: ignore[no-untyped-def]
    return ToolFactory([card], observer=observer).get_commands()[ExecCommand]


def test_runs_in_the_team_workspace(alice: FakeObserver) -> None:
    run = command(ExecTool(mode="local"), alice)
    out = run(cmd="sh -c 'echo hello > greeting.txt && cat greeting.txt && pwd'")
    assert out.startswith("[BEGIN UNTRUSTED OUTPUT")
    assert "exit code: 0" in out
    assert "hello" in out
    assert (workspace_dir("team-1") / "greeting.txt").read_text() == "hello\n"


def test_one_sandbox_per_team(alice: FakeObserver, bob: FakeObserver) -> None:
    command(ExecTool(mode="local"), alice)
    command(ExecTool(mode="local"), bob)
    assert list(alice.team.tool_actors()) == ["#SandboxActor"]


def test_refusals_are_strings(alice: FakeObserver) -> None:
    run = command(ExecTool(mode="local", allowed_commands=["echo"]), alice)
    refused = run(cmd="psql -c 'select 1'")
    assert "CommandNotAllowedError: Command 'psql' is not in the allowed commands list. Allowed: [echo]" in refused
    escaped = run(cmd="echo hi", cwd="../..")
    assert "path escapes the workspace root" in escaped


def test_timeout_kills_and_reports_124(alice: FakeObserver) -> None:
    run = command(ExecTool(mode="local", timeout_s=5), alice)
    out = run(cmd="sh -c 'sleep 30'", timeout_s=0.5)
    assert "exit code: 124" in out


def test_secrets_do_not_pass(alice: FakeObserver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    run = command(ExecTool(mode="local"), alice)
    assert "sk-should-not-leak" not in run(cmd="sh -c 'env'")


def test_unknown_mode_and_unbound_use() -> None:
    with FakeObserver("Ann") as ann, pytest.raises(WiringError, match="Unknown sandbox mode 'e2b'"):
        ToolFactory([ExecTool(mode="e2b")], observer=ann)
    with pytest.raises(WiringError, match="needs an observer"):
        ToolFactory([ExecTool(mode="local")])


def test_round_trip() -> None:
    card = ExecTool(mode="bwrap", limits=ExecLimits(cpu_s=5), options={"allow_network": True}, timeout_s=10)
    assert load_cards(json.loads(json.dumps(dump_cards([card])))) == [card]


def test_other_packages_add_backends_by_registering_a_class(
    alice: FakeObserver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathlib import Path, PurePosixPath

    from toolcards.sandbox import SANDBOX_ACTOR_CLASSES, ExecResult, SandboxActor

    class RemoteSandboxActor(SandboxActor):
        mode = "e2b"
        isolation = "a remote micro-VM"

        def _execute(self, cmd: str, host_cwd: Path, rel_cwd: PurePosixPath, timeout_s: float) -> ExecResult:
            return ExecResult(command=cmd, exit_code=0, stdout=f"remote ran {cmd} in {rel_cwd}\n", backend="e2b")

    monkeypatch.setitem(SANDBOX_ACTOR_CLASSES, "e2b", RemoteSandboxActor)
    (workspace_dir("team-1") / "src").mkdir()
    out = command(ExecTool(mode="e2b"), alice)(cmd="ls -la", cwd="src")
    assert "remote ran ls -la in src" in out
