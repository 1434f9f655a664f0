"""The docker backend against a fake ``docker`` (argv and lifecycle), and a real daemon
only where one answers."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from bench._process_groups import live_processes_with

from tests.sandbox.conftest import SandboxRef, calls, marker, run_via_proxy, wait_until
from toolcards.sandbox import ExecLimits
from toolcards.sandbox._actor import DockerSandboxActor
from toolcards.sandbox._docker import GROUP_WRAPPER, KILL_SCRIPT, docker_available


def start(workspace: Path, **options: object) -> SandboxRef:
    return DockerSandboxActor.start(workspace, ExecLimits(), 5.0, {"allowed_commands": (), **options})


def test_container_starts_lazily_once_and_is_removed_at_stop(fake_docker: Path, workspace: Path) -> None:
    ref = start(workspace)
    assert calls(fake_docker) == []
    assert run_via_proxy(ref, "echo one").stdout == "fake output\n"
    assert run_via_proxy(ref, "echo two").exit_code == 0
    ref.stop()
    verbs = [argv[0] for argv in calls(fake_docker)]
    assert verbs == ["image", "run", "exec", "exec", "rm"]
    name = calls(fake_docker)[1][calls(fake_docker)[1].index("--name") + 1]
    assert calls(fake_docker)[-1] == ["rm", "-f", name]


def test_run_argv_locks_the_container_down(fake_docker: Path, workspace: Path) -> None:
    run_via_proxy(start(workspace), "true")
    argv = calls(fake_docker)[1]

    def value(flag: str) -> str:
        return argv[argv.index(flag) + 1]

    assert value("--network") == "none"
    assert value("--memory") == "512m" and value("--memory-swap") == "512m"
    assert value("--pids-limit") == "256"
    assert value("--cap-drop") == "ALL"
    assert value("--security-opt") == "no-new-privileges"
    assert value("--user") == f"{os.getuid()}:{os.getgid()}"
    assert value("--tmpfs").startswith("/tmp:")
    assert value("-v") == f"{workspace.resolve()}:/workspace:rw"
    assert "--read-only" in argv and "--init" in argv
    assert argv[-3:] == ["toolcards-sandbox:latest", "sleep", "infinity"]


def test_exec_argv_has_cwd_deadline_and_only_allowlisted_env(
    fake_docker: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-leak")
    (workspace / "sub").mkdir()
    run_via_proxy(start(workspace), "pytest -q", cwd="sub", timeout_s=3)
    argv = calls(fake_docker)[2]
    assert argv[argv.index("-w") + 1] == "/workspace/sub"
    assert argv[-7:-1] == ["sh", "-c", GROUP_WRAPPER, "sandbox", "3", "pytest -q"]
    assert argv[-1].isalnum()  # the command's id, for kill_command
    env = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-e"]
    assert "HOME=/workspace" in env
    assert not any("do-not-leak" in item for item in env)


def test_in_container_wrapper_passes_exit_codes_and_ends_background_processes(tmp_path: Path) -> None:
    # The wrapper is plain sh + coreutils: run it here exactly as docker exec would.
    tag = marker()
    done = subprocess.run(
        ["sh", "-c", GROUP_WRAPPER, "sandbox", "10", f"sleep {tag} & echo hi; exit 3"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    assert (done.returncode, done.stdout) == (3, "hi\n")
    assert live_processes_with(f"sleep {tag}") == []


def test_in_container_wrapper_stops_the_command_at_its_deadline(tmp_path: Path) -> None:
    tag = marker()
    done = subprocess.run(
        ["sh", "-c", GROUP_WRAPPER, "sandbox", "0.3", f"sleep {tag} & sleep {tag}"],
        capture_output=True,
        timeout=10,
        check=False,
    )
    assert done.returncode == 124
    assert live_processes_with(f"sleep {tag}") == []


def test_a_running_command_can_be_stopped_by_its_id(tmp_path: Path) -> None:
    # What the disk quota's watchdog runs through docker exec, here with the host's sh.
    tag, command_id = marker(), uuid.uuid4().hex[:12]
    wrapper = subprocess.Popen(["sh", "-c", GROUP_WRAPPER, "sandbox", "30", f"sleep {tag} & sleep {tag}", command_id])
    pid_file = Path(f"/tmp/.toolcards-cmd-{command_id}")
    assert wait_until(pid_file.exists)
    subprocess.run(["sh", "-c", KILL_SCRIPT, "sandbox", command_id], check=True, timeout=10)
    assert wrapper.wait(timeout=10) == 128 + 9
    assert live_processes_with(f"sleep {tag}") == []
    assert not pid_file.exists()


def test_kill_command_runs_the_kill_script_in_the_container(fake_docker: Path, workspace: Path) -> None:
    ref = start(workspace)
    run_via_proxy(ref, "true")
    container = ref.proxy().container.get(timeout=5)
    container.kill_command("abc123")
    assert calls(fake_docker)[-1] == ["exec", container.name, "sh", "-c", KILL_SCRIPT, "sandbox", "abc123"]


def test_network_and_image_are_configurable(fake_docker: Path, workspace: Path) -> None:
    run_via_proxy(start(workspace, allow_network=True, image="my/sandbox:2"), "true")
    argv = calls(fake_docker)[1]
    assert argv[argv.index("--network") + 1] == "bridge"
    assert "my/sandbox:2" in argv
    assert calls(fake_docker)[0][-1] == "my/sandbox:2"


def test_exit_code_of_the_command_comes_back(
    fake_docker: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_DOCKER_EXIT", "3")
    assert run_via_proxy(start(workspace), "false").exit_code == 3


def test_missing_image_says_how_to_build_it(
    fake_docker: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_DOCKER_NO_IMAGE", "1")
    ref = start(workspace)
    result = run_via_proxy(ref, "echo hi")
    assert result.error is not None
    assert result.error.startswith("SandboxError: docker image 'toolcards-sandbox:latest' is not available")
    assert "docker build -t toolcards-sandbox:latest docker/" in result.error
    ref.stop()
    assert [argv[0] for argv in calls(fake_docker)] == ["image"]


def test_probe_uses_the_image_check(fake_docker: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docker_available.cache_clear()
    try:
        assert docker_available("docker", "toolcards-sandbox:latest")
        docker_available.cache_clear()
        monkeypatch.setenv("FAKE_DOCKER_NO_IMAGE", "1")
        assert not docker_available("docker", "toolcards-sandbox:latest")
    finally:
        docker_available.cache_clear()


def _daemon_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=5, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@pytest.mark.skipif(not _daemon_answers(), reason="no docker daemon answers here")
def test_real_container_runs_a_command_without_network(workspace: Path) -> None:
    if not docker_available("docker", "toolcards-sandbox:latest"):
        pytest.skip("image toolcards-sandbox:latest is not built (docker build -t toolcards-sandbox docker/)")
    ref = start(workspace)
    result = run_via_proxy(
        ref, "echo hi > f && cat f && python -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 2)'"
    )
    assert result.stdout == "hi\n"
    assert result.exit_code != 0
