"""ExecTool through the factory: one sandbox per team, per-card settings, errors for
refused and stopped commands, real runs."""

from __future__ import annotations

import json
import time

import pytest

from tests.sandbox.conftest import backend_class
from toolcards import ToolFactory, WiringError, dump_cards, load_cards
from toolcards.actors import ActorSystem
from toolcards.errors import RetriableError, ToolFailed, ToolTimeout
from toolcards.fs._locations import workspace_dir
from toolcards.sandbox._guards import MAX_COMMAND_CHARS
from toolcards.sandbox._models import ExecLimits
from toolcards.sandbox._tool import ExecCommandParam, ExecTool
from toolcards.testing import FakeObserver


def command(card: ExecTool, observer: FakeObserver):  # type: ignore[no-untyped-def]
    return ToolFactory([card], observer=observer).get_commands()[ExecCommandParam]


def test_runs_in_the_team_workspace(alice: FakeObserver) -> None:
    run = command(ExecTool(mode="local"), alice)
    out = run(cmd="sh -c 'echo hello > greeting.txt && cat greeting.txt && pwd'")
    assert out.startswith("[BEGIN UNTRUSTED")
    assert "exit code: 0" in out
    assert "hello" in out
    assert (workspace_dir("team-1") / "greeting.txt").read_text() == "hello\n"


def test_one_sandbox_per_team(alice: FakeObserver, bob: FakeObserver) -> None:
    command(ExecTool(mode="local"), alice)
    command(ExecTool(mode="local"), bob)
    assert list(alice.team.tool_actors()) == ["#SandboxActor"]


def test_refusals_are_retriable_errors(alice: FakeObserver) -> None:
    run = command(ExecTool(mode="local", allowed_commands=["echo"]), alice)
    with pytest.raises(RetriableError, match=r"CommandNotAllowedError: Command 'psql' is not in the allowed"):
        run(cmd="psql -c 'select 1'")
    with pytest.raises(RetriableError, match="path escapes the workspace root"):
        run(cmd="echo hi", cwd="../..")


@pytest.mark.parametrize(
    ("timeout_s", "expected"),
    [(float("nan"), "finite number"), (float("inf"), "finite number"), (0, "greater than 0"), (-5, "greater than 0")],
)
def test_a_timeout_that_is_not_a_positive_number_is_refused_for_a_retry(
    alice: FakeObserver, timeout_s: float, expected: str
) -> None:
    # NaN passed the sandbox's own `timeout_s <= 0` check and failed deep inside, as a
    # terminal error in the foreground and a failed run in the background.
    run = command(ExecTool(mode="local"), alice)
    for background in (False, True):
        with pytest.raises(RetriableError, match=rf"Invalid arguments for exec_command: timeout_s: .*{expected}"):
            run(cmd="echo hi", timeout_s=timeout_s, background=background)


def test_a_failing_command_is_still_a_result(alice: FakeObserver) -> None:
    out = command(ExecTool(mode="local"), alice)(cmd="sh -c 'echo broken >&2; exit 3'")
    assert "exit code: 3" in out and "broken" in out


def test_timeout_is_a_tool_timeout_with_the_output_in_the_envelope(alice: FakeObserver) -> None:
    run = command(ExecTool(mode="local", timeout_s=5), alice)
    with pytest.raises(ToolTimeout) as caught:
        run(cmd="sh -c 'echo begun; sleep 30'", timeout_s=0.5)
    message = str(caught.value)
    assert "did not finish in time" in message
    assert "[BEGIN UNTRUSTED" in message and "exit code: 124" in message and "begun" in message


def test_a_timeout_over_the_card_s_limit_is_capped_and_the_answer_says_so(alice: FakeObserver) -> None:
    # The cap was silent, and the timeout's advice, "a longer timeout_s (up to the card's
    # limit)", neither named the limit nor could help a call that already had all of it.
    run = command(ExecTool(mode="local", timeout_s=1), alice)
    assert "[timeout_s=100000 capped at 1 s, the configured limit]" in run(cmd="echo hi", timeout_s=100000)
    with pytest.raises(ToolTimeout) as capped:
        run(cmd="sh -c 'echo begun; sleep 30'", timeout_s=100000)
    assert str(capped.value).startswith(
        "exec_command: the command did not finish in time (1 s: timeout_s=100000 was capped to the configured "
        "limit) and was killed. Make it faster, run it in smaller parts, or run it with background=true (killed "
        "after 600 s). What it printed:\n[BEGIN UNTRUSTED"
    )
    assert "longer timeout_s" not in str(capped.value)
    with pytest.raises(ToolTimeout) as at_the_limit:
        run(cmd="sh -c 'sleep 30'")
    assert "(1 s, the configured limit) and was killed." in str(at_the_limit.value)
    started = run(cmd="sh -c 'sleep 1'", timeout_s=100000, background=True)
    assert "(killed after 600 s: timeout_s=100000 was capped to the configured limit)" in started


def test_a_timeout_under_the_card_s_limit_is_told_the_limit_it_may_ask_for(alice: FakeObserver) -> None:
    run = command(ExecTool(mode="local", timeout_s=5, max_background_runs=0), alice)
    with pytest.raises(ToolTimeout) as short:
        run(cmd="sh -c 'sleep 30'", timeout_s=0.3)
    assert str(short.value).startswith(
        "exec_command: the command did not finish in time (0.3 s, its timeout_s) and was killed. Make it faster, "
        "run it in smaller parts, or pass a longer timeout_s (at most 5 s, the configured limit)."
    )
    with pytest.raises(ToolTimeout) as capped:
        command(ExecTool(mode="local", timeout_s=0.3, max_background_runs=0), alice)(
            cmd="sh -c 'sleep 30'", timeout_s=9
        )
    # Without background runs there is no longer way to offer.
    assert "was capped to the configured limit) and was killed. Make it faster or run it in smaller parts." in str(
        capped.value
    )


def test_refusals_and_timeouts_are_errors_on_the_command_channel(alice: FakeObserver) -> None:
    registry = ToolFactory([ExecTool(mode="local", allowed_commands=["echo", "sh"])], observer=alice).command_registry()
    assert registry.dispatch("/exec_command 'psql -l'").startswith("Error: CommandNotAllowedError: Command 'psql'")
    assert registry.dispatch("/exec_command \"sh -c 'sleep 5'\" timeout_s=0.3").startswith("Error: exec_command:")


def test_a_sandbox_failure_is_tool_failed(alice: FakeObserver) -> None:
    run = command(ExecTool(mode="bwrap", options={"bwrap_path": "/nonexistent/bwrap"}, allowed_commands=[]), alice)
    with pytest.raises(ToolFailed, match="could not start"):
        run(cmd="true")


def test_a_command_over_the_length_limit_is_refused_by_the_schema(alice: FakeObserver) -> None:
    tool = ToolFactory([ExecTool(mode="local")], observer=alice).tools()[0]
    assert "maxLength" not in tool.parameters_schema["properties"]["cmd"]  # enforced, not listed
    started = time.perf_counter()
    with pytest.raises(RetriableError, match=f"cmd: String should have at most {MAX_COMMAND_CHARS} characters"):
        tool.call_sync({"cmd": "echo " + "a" * 2_000_000})
    # Not asserted (machines differ), measured here: about a millisecond.
    _ = time.perf_counter() - started


def test_secrets_do_not_pass(alice: FakeObserver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    run = command(ExecTool(mode="local"), alice)
    assert "sk-should-not-leak" not in run(cmd="sh -c 'env'")


def test_unknown_mode_and_unbound_use() -> None:
    with FakeObserver("Ann") as ann, pytest.raises(WiringError, match="Unknown sandbox mode 'e2b'"):
        ToolFactory([ExecTool(mode="e2b")], observer=ann)
    with pytest.raises(WiringError, match="needs an observer"):
        ToolFactory([ExecTool(mode="local")])


# -- two cards, one team ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["local", "bwrap"])
def test_each_card_keeps_its_own_allowlist_and_memory_cap(mode: str) -> None:
    backend_class(mode)  # skips where bwrap cannot run
    hog = "python3 -c 'b = bytearray(200 * 1024 * 1024); print(len(b))'"
    with ActorSystem() as system:
        builder = FakeObserver("Builder", "pair", system=system)
        reviewer = FakeObserver("Reviewer", "pair", system=system)
        as_builder = command(ExecTool(mode=mode), builder)
        as_reviewer = command(
            ExecTool(mode=mode, allowed_commands=["ls", "python3"], limits=ExecLimits(memory_mb=64)), reviewer
        )
        with pytest.raises(RetriableError, match="Command 'bash' is not in the allowed commands list"):
            as_reviewer(cmd="bash -c 'echo should not run'")
        capped = as_reviewer(cmd=hog)
        assert "209715200" not in capped and "MemoryError" in capped
        # The builder's card still has its own (default) allowlist and 512 MB.
        assert "209715200" in as_builder(cmd=f"bash -c {json.dumps(hog)}")
        assert list(builder.team.tool_actors()) == ["#SandboxActor"]


def test_cards_in_different_modes_are_a_wiring_error_naming_both(alice: FakeObserver, bob: FakeObserver) -> None:
    backend_class("bwrap")
    command(ExecTool(mode="bwrap"), alice)
    with pytest.raises(WiringError) as caught:
        command(ExecTool(mode="local"), bob)
    message = str(caught.value)
    assert "ExecTool of @Bob cannot share team team-1's sandbox with ExecTool of @Alice" in message
    assert "mode 'local' vs 'bwrap' (ExecTool of @Bob vs ExecTool of @Alice)" in message


def test_cards_on_different_workspaces_or_concurrency_are_a_wiring_error(
    alice: FakeObserver, bob: FakeObserver
) -> None:
    command(ExecTool(mode="local"), alice)
    with pytest.raises(WiringError, match=r"workspace '.*other' vs '.*team-1'.*options.max_concurrent 2 vs 4"):
        command(ExecTool(mode="local", workspace_id="other", options={"max_concurrent": 2}), bob)


def test_docker_container_settings_must_agree(alice: FakeObserver, bob: FakeObserver) -> None:
    # Nothing is started at bind: no docker needed.
    command(ExecTool(mode="docker"), alice)
    command(ExecTool(mode="docker", allowed_commands=["ls"], timeout_s=5), bob)  # per call: fine
    with FakeObserver("Carol", "team-1", system=alice.system) as carol, pytest.raises(WiringError) as caught:
        command(ExecTool(mode="docker", limits=ExecLimits(memory_mb=64), options={"image": "x:1"}), carol)
    assert "limits.memory_mb 64 vs 512" in str(caught.value)
    assert "options.image 'x:1' vs 'toolcards-sandbox:latest'" in str(caught.value)


def test_round_trip() -> None:
    card = ExecTool(mode="bwrap", limits=ExecLimits(cpu_s=5), options={"allow_network": True}, timeout_s=10)
    assert load_cards(json.loads(json.dumps(dump_cards([card])))) == [card]


def test_other_packages_add_backends_by_registering_a_class(
    alice: FakeObserver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathlib import Path, PurePosixPath

    from toolcards.sandbox import SANDBOX_ACTOR_CLASSES, CommandPolicy, ExecResult, SandboxActor

    class RemoteSandboxActor(SandboxActor):
        mode = "e2b"
        isolation = "a remote micro-VM"

        def _execute(
            self, cmd: str, host_cwd: Path, rel_cwd: PurePosixPath, timeout_s: float, policy: CommandPolicy
        ) -> ExecResult:
            return ExecResult(command=cmd, exit_code=0, stdout=f"remote ran {cmd} in {rel_cwd}\n", backend="e2b")

    monkeypatch.setitem(SANDBOX_ACTOR_CLASSES, "e2b", RemoteSandboxActor)
    (workspace_dir("team-1") / "src").mkdir()
    out = command(ExecTool(mode="e2b"), alice)(cmd="ls -la", cwd="src")
    assert "remote ran ls -la in src" in out


@pytest.mark.parametrize("bad", ["../x", ".hidden", "a/b", "", "x" * 200])
def test_a_bad_workspace_id_is_refused_when_the_card_is_built(bad: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="Invalid workspace id"):
        ExecTool(workspace_id=bad)


def test_the_description_says_what_this_card_allows(alice: FakeObserver, bob: FakeObserver) -> None:
    local = ToolFactory([ExecTool(mode="local", allowed_commands=["ls", "python3"])], observer=alice).tools()[0]
    assert local.description.endswith("Allowed commands: ls, python3.")
    assert "network" not in local.description  # local mode cannot promise there is none
    from toolcards.sandbox._bwrap import bwrap_available

    if bwrap_available():
        with FakeObserver("Ann", "isolated") as ann:
            isolated = ToolFactory([ExecTool(mode="bwrap")], observer=ann).tools()[0]
        assert isolated.description.endswith("No network.")
