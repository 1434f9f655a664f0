"""Misbehaving commands, per backend that runs here (``local`` and ``bwrap``).

Each test runs a command that would hurt the host if uncontained, with small limits so it
stays fast and safe, and checks it was stopped, reported, and left nothing behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench._process_groups import live_processes_with

from tests.sandbox.conftest import (
    StartSandbox,
    fork_bomb_contained,
    marker,
    run_via_proxy,
)
from toolcards.sandbox import ExecLimits


def test_echo_runs_in_the_workspace(sandbox: StartSandbox, workspace: Path) -> None:
    (workspace / "hello.txt").write_text("hi from the workspace\n")
    result = run_via_proxy(sandbox(), "cat hello.txt && pwd")
    assert result.exit_code == 0, result.render()
    assert result.stdout.startswith("hi from the workspace\n")


def test_exit_code_passes_through(sandbox: StartSandbox) -> None:
    result = run_via_proxy(sandbox(), "echo failing >&2; exit 3")
    assert (result.exit_code, result.stderr) == (3, "failing\n")


def test_fork_bomb_is_capped_and_cleaned_up(sandbox: StartSandbox) -> None:
    if not fork_bomb_contained():
        pytest.skip("running as root without a cgroup pids controller: nothing caps a fork bomb here")
    tag = marker()
    # Bounded even if containment failed: depth 6 means at most ~250 processes in total.
    bomb = f"b(){{ if [ $1 -lt 6 ]; then b $(($1+1)) & b $(($1+1)) & fi; sleep {tag}; }}; b 0"
    result = run_via_proxy(sandbox(ExecLimits(max_processes=16), timeout_s=2), bomb)
    assert result.exit_code not in (0, None)
    assert any("process limit reached" in note for note in result.notes) or "fork" in result.stderr
    assert live_processes_with(f"sleep {tag}") == []


def test_memory_hog_is_stopped(sandbox: StartSandbox) -> None:
    result = run_via_proxy(
        sandbox(ExecLimits(memory_mb=128)), "python3 -c 'b = bytearray(2 * 1024 ** 3); print(len(b))'"
    )
    assert result.exit_code != 0
    assert "MemoryError" in result.stderr or any("memory" in note for note in result.notes)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_starts_under_the_default_memory_limit(sandbox: StartSandbox) -> None:
    # RLIMIT_AS of 512 MB would stop node before its first line; RLIMIT_DATA does not.
    result = run_via_proxy(sandbox(ExecLimits()), "node -e 'console.log(1 + 1)'")
    assert (result.exit_code, result.stdout) == (0, "2\n"), result.render()


def test_cpu_spin_is_killed_by_the_cpu_limit(sandbox: StartSandbox) -> None:
    result = run_via_proxy(sandbox(ExecLimits(cpu_s=1), timeout_s=30), "bash -c 'while :; do :; done'")
    assert not result.timed_out
    assert result.exit_code == 128 + signal.SIGXCPU
    assert any("CPU time limit of 1 s" in note for note in result.notes)


def test_huge_file_write_stops_at_the_file_size_limit(sandbox: StartSandbox, workspace: Path) -> None:
    result = run_via_proxy(sandbox(ExecLimits(file_size_mb=1)), "head -c 2G /dev/zero > big.bin")
    assert result.exit_code == 128 + signal.SIGXFSZ
    assert any("file size limit of 1 MB" in note for note in result.notes)
    assert (workspace / "big.bin").stat().st_size <= 1024 * 1024


def test_timeout_kills_the_command_and_its_background_grandchild(sandbox: StartSandbox) -> None:
    tag = marker()
    result = run_via_proxy(sandbox(timeout_s=1), f"sleep {tag} & echo started; sleep {tag}")
    assert result.timed_out and result.exit_code == 124
    assert result.stdout == "started\n"
    assert any("timed out after 1 s" in note for note in result.notes)
    assert live_processes_with(f"sleep {tag}") == []


def test_background_processes_end_with_the_command(sandbox: StartSandbox) -> None:
    tag = marker()
    result = run_via_proxy(sandbox(), f"sleep {tag} & echo done")
    assert result.exit_code == 0 and not result.timed_out
    assert live_processes_with(f"sleep {tag}") == []


def test_api_key_of_the_parent_is_absent_inside(sandbox: StartSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-do-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-test-do-not-leak")
    result = run_via_proxy(sandbox(), "env")
    assert result.exit_code == 0
    assert "do-not-leak" not in result.stdout
    assert "HOME=" in result.stdout


def test_home_is_the_workspace(sandbox: StartSandbox, workspace: Path) -> None:
    result = run_via_proxy(sandbox(), "cd ~ && touch made-at-home")
    assert result.exit_code == 0, result.render()
    assert (workspace / "made-at-home").exists()


def test_cwd_runs_in_a_subdirectory_and_escapes_are_refused(sandbox: StartSandbox, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    actor = sandbox()
    assert run_via_proxy(actor, "touch here", cwd="sub").exit_code == 0
    assert (workspace / "sub" / "here").exists()
    refused = run_via_proxy(actor, "ls", cwd="../")
    assert refused.exit_code is None
    assert refused.error is not None and "path escapes the workspace root" in refused.error


def test_output_is_capped_at_capture(sandbox: StartSandbox) -> None:
    result = run_via_proxy(sandbox(ExecLimits(output_chars=1_000)), "head -c 300000 /dev/zero | tr '\\0' x")
    assert result.exit_code == 0
    assert result.stdout_cut > 290_000
    assert len(result.stdout) < 1_200


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def test_local_backend_documents_that_it_shares_the_network(workspace: Path, listener: int) -> None:
    from toolcards.sandbox._actor import LocalSandboxActor

    ref = LocalSandboxActor.start(workspace, options={"allowed_commands": ()})
    result = run_via_proxy(ref, f"echo > /dev/tcp/127.0.0.1/{listener} && echo connected")
    assert result.stdout == "connected\n"


def test_local_backend_runs_without_a_cgroup_too(workspace: Path) -> None:
    from toolcards.sandbox._actor import LocalSandboxActor

    ref = LocalSandboxActor.start(workspace, options={"allowed_commands": (), "use_cgroup": False})
    tag = marker()
    result = run_via_proxy(ref, f"sleep {tag} & echo ok")
    assert result.stdout == "ok\n"
    assert live_processes_with(f"sleep {tag}") == []
    assert os.path.isdir(workspace)
