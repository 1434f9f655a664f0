"""The sandbox actor: futures, concurrency, refusals, stop, the backend registry."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pykka
import pytest
from bench._process_groups import live_processes_with

from tests.sandbox.conftest import SandboxRef, marker, run_via_proxy, wait_until
from toolcards.errors import WiringError
from toolcards.sandbox import (
    SANDBOX_ACTOR_CLASSES,
    BwrapOptions,
    CommandPolicy,
    ExecLimits,
    ExecResult,
    LocalOptions,
    SandboxActor,
)
from toolcards.sandbox._actor import LocalSandboxActor, sandbox_actor_class
from toolcards.sandbox._process import SpawnFailed


def start_local(workspace: Path, timeout_s: float = 10.0, **options: object) -> SandboxRef:
    return LocalSandboxActor.start(workspace, None, timeout_s, {"allowed_commands": (), **options})


def test_run_returns_a_future_at_once(workspace: Path) -> None:
    ref = start_local(workspace)
    inner = ref.proxy().run("echo hi").get(timeout=5)
    assert isinstance(inner, pykka.Future)
    assert inner.get(timeout=10).stdout == "hi\n"


def test_long_commands_do_not_queue_behind_each_other(workspace: Path) -> None:
    ref = start_local(workspace)
    proxy = ref.proxy()
    # The waiter only finishes if the second command runs while it is still running.
    waiter = proxy.run("while [ ! -f go ]; do sleep 0.02; done; echo released", "", 8).get(timeout=5)
    starter = proxy.run("touch go").get(timeout=5)
    assert starter.get(timeout=10).exit_code == 0
    result = waiter.get(timeout=20)
    assert (result.exit_code, result.stdout) == (0, "released\n")


def test_the_actor_answers_while_a_command_runs(workspace: Path) -> None:
    ref = start_local(workspace)
    proxy = ref.proxy()
    running = proxy.run("while [ ! -f go ]; do sleep 0.02; done", "", 8).get(timeout=5)
    assert proxy.describe().get(timeout=5).startswith("local sandbox: process limits only")
    (workspace / "go").touch()
    assert running.get(timeout=20).exit_code == 0


def test_refused_command_is_a_result_not_an_exception(workspace: Path) -> None:
    ref = LocalSandboxActor.start(workspace)
    result = run_via_proxy(ref, "psql -c 'select 1'")
    assert result.exit_code is None and not result.ok
    assert result.render().startswith("CommandNotAllowedError: Command 'psql' is not in the allowed commands list.")


def test_refusals_are_marked_as_fixable_and_failures_are_not(workspace: Path) -> None:
    ref = LocalSandboxActor.start(workspace)
    assert run_via_proxy(ref, "psql").refused
    assert run_via_proxy(ref, "ls", cwd="..").refused
    assert run_via_proxy(ref, "ls", timeout_s=-1).refused


def test_each_call_runs_under_the_policy_it_carries(workspace: Path) -> None:
    actor = LocalSandboxActor(workspace, options={"allowed_commands": ("echo",)}, timeout_s=5)
    narrow = LocalSandboxActor.policy_for(ExecLimits(cpu_s=1), 1.0, {"allowed_commands": ("ls",)})
    assert actor.execute("echo hi").stdout == "hi\n"
    assert actor.execute("echo hi", policy=narrow).error is not None
    spin = actor.execute(
        "bash -c 'while :; do :; done'", policy=LocalSandboxActor.policy_for(ExecLimits(cpu_s=1), 5.0, {})
    )
    assert any("CPU time limit of 1 s" in note for note in spin.notes)
    assert actor.execute("echo still", cwd="").stdout == "still\n"


def test_conflicts_list_what_one_actor_cannot_vary(workspace: Path, tmp_path: Path) -> None:
    actor = LocalSandboxActor(workspace, options={"max_concurrent": 4})
    same = LocalSandboxActor.policy_for(ExecLimits(memory_mb=64), 3.0, {"allowed_commands": ("ls",)})
    assert actor.conflicts("local", workspace, same) == []
    other = LocalSandboxActor.policy_for(ExecLimits(), 3.0, {"max_concurrent": 1})
    assert actor.conflicts("bwrap", tmp_path / "elsewhere", other) == [
        "mode 'bwrap' vs 'local'",
        f"workspace {str(tmp_path / 'elsewhere')!r} vs {str(workspace.resolve())!r}",
        "options.max_concurrent 1 vs 4",
    ]


def test_symlink_cwd_escape_is_refused(workspace: Path, tmp_path: Path) -> None:
    (workspace / "out").symlink_to(tmp_path)
    result = run_via_proxy(start_local(workspace), "ls", cwd="out")
    assert result.error == (
        "SandboxError: cwd 'out': path escapes the workspace root — use a path relative to it "
        "('out' is a symlink that leads out of it)."
    )


def test_a_call_may_shorten_the_timeout_but_not_extend_it(workspace: Path) -> None:
    ref = start_local(workspace, timeout_s=1)
    result = run_via_proxy(ref, "echo ok", timeout_s=600)
    assert result.exit_code == 0
    assert "timeout_s=600 capped at 1 s, the configured limit" in result.notes
    short = run_via_proxy(ref, f"sleep {marker()}", timeout_s=0.3)
    assert short.timed_out and "timed out after 0.3 s" in short.render()


def test_non_positive_timeout_is_reported(workspace: Path) -> None:
    result = run_via_proxy(start_local(workspace), "echo", timeout_s=0)
    assert result.error is not None and "timeout_s must be positive" in result.error


def test_stop_kills_running_commands(workspace: Path) -> None:
    tag = marker()
    ref = start_local(workspace, timeout_s=30)
    inner = ref.proxy().run(f"sleep {tag}").get(timeout=5)
    assert wait_until(lambda: bool(live_processes_with(f"sleep {tag}")))
    ref.stop(timeout=10)
    result = inner.get(timeout=10)
    assert any("sandbox shut down" in note for note in result.notes)
    assert live_processes_with(f"sleep {tag}") == []


def test_execute_blocks_in_the_calling_thread(workspace: Path) -> None:
    actor = LocalSandboxActor(workspace, options={"allowed_commands": ()})
    assert actor.execute("echo direct").stdout == "direct\n"


def test_options_from_another_backend_keep_their_common_fields(workspace: Path) -> None:
    actor = LocalSandboxActor(workspace, options=BwrapOptions(allow_network=True, allowed_commands=("git",)))
    assert isinstance(actor.options, LocalOptions)
    assert actor.options.allowed_commands == ("git",)


def test_invalid_options_and_timeout_are_wiring_errors(workspace: Path) -> None:
    with pytest.raises(WiringError, match="invalid sandbox options"):
        LocalSandboxActor(workspace, options={"allow_network": True})
    with pytest.raises(WiringError, match="timeout_s must be positive"):
        LocalSandboxActor(workspace, timeout_s=0)


def test_the_registry_holds_every_builtin_mode() -> None:
    assert set(SANDBOX_ACTOR_CLASSES) >= {"local", "bwrap", "docker", "seatbelt"}
    for mode, cls in SANDBOX_ACTOR_CLASSES.items():
        assert cls.mode == mode


class EchoBackend(SandboxActor):
    """A remote-style backend: no host process, just a canned answer."""

    mode = "echo-test"

    def _execute(
        self, cmd: str, host_cwd: Path, rel_cwd: PurePosixPath, timeout_s: float, policy: CommandPolicy
    ) -> ExecResult:
        if cmd.startswith("fail"):
            raise SpawnFailed("remote sandbox unreachable")
        if cmd.startswith("bug"):
            raise RuntimeError("programming error")
        return ExecResult(command=cmd, exit_code=0, stdout=f"{rel_cwd}: {cmd}", backend=self.mode)


def test_another_package_can_register_a_backend(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SANDBOX_ACTOR_CLASSES, "echo-test", EchoBackend)
    cls = sandbox_actor_class("echo-test")
    ref = cls.start(workspace, options={"allowed_commands": ("echo", "fail", "bug")})
    assert run_via_proxy(ref, "echo hi").stdout == ".: echo hi"
    failed = run_via_proxy(ref, "fail now")
    assert failed.error == "SandboxError: remote sandbox unreachable" and not failed.refused
    with pytest.raises(RuntimeError, match="programming error"):
        run_via_proxy(ref, "bug")


def test_unknown_mode_lists_the_known_ones() -> None:
    with pytest.raises(WiringError, match=r"Known modes: auto, bwrap, docker, local, seatbelt"):
        sandbox_actor_class("e2b")
