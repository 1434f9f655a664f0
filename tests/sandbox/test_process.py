"""Spawning, capture, and stopping a process group: the shared host-process machinery."""

from __future__ import annotations

import os
import resource
import signal
import sys
from pathlib import Path

import pytest
from bench._process_groups import live_processes_with

from tests.sandbox.conftest import marker
from toolcards.sandbox import ExecLimits
from toolcards.sandbox._process import (
    TIMEOUT_EXIT_CODE,
    OutputCapture,
    RunningProcess,
    SpawnFailed,
    rlimits_for,
    run_process,
    signal_note,
    user_process_count,
)

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def test_exit_code_and_streams_come_back(tmp_path: Path) -> None:
    outcome = run_process(
        ["bash", "-c", "echo out; echo err >&2; exit 3"], cwd=tmp_path, env=ENV, timeout_s=10, output_chars=1000
    )
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (3, "out\n", "err\n")
    assert not outcome.timed_out


def test_a_background_grandchild_holding_stdout_does_not_hold_up_the_result(tmp_path: Path) -> None:
    tag = marker()
    outcome = run_process(
        ["bash", "-c", f"sleep {tag} & echo started"], cwd=tmp_path, env=ENV, timeout_s=20, output_chars=1000
    )
    assert not outcome.timed_out
    assert outcome.stdout == "started\n"
    assert live_processes_with(f"sleep {tag}") == []


def test_timeout_kills_the_whole_group_and_reports_124(tmp_path: Path) -> None:
    tag = marker()
    outcome = run_process(
        ["bash", "-c", f"sleep {tag} & echo begun; sleep {tag}"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=0.5,
        output_chars=1000,
    )
    assert outcome.timed_out and outcome.exit_code == TIMEOUT_EXIT_CODE
    assert outcome.stdout == "begun\n"
    assert live_processes_with(f"sleep {tag}") == []


def test_signal_death_is_reported_as_128_plus_n(tmp_path: Path) -> None:
    outcome = run_process(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=10,
        output_chars=1000,
    )
    assert outcome.exit_code == 128 + signal.SIGTERM and outcome.signal == signal.SIGTERM


def test_capture_keeps_head_and_tail_and_counts_the_rest(tmp_path: Path) -> None:
    script = "print('FIRST'); print('x' * 200_000); print('LAST')"
    outcome = run_process([sys.executable, "-c", script], cwd=tmp_path, env=ENV, timeout_s=10, output_chars=1000)
    assert outcome.stdout.startswith("FIRST") and outcome.stdout.rstrip().endswith("LAST")
    assert outcome.stdout_cut > 190_000
    assert "dropped while capturing" in outcome.stdout


def test_output_capture_bounds_memory() -> None:
    capture = OutputCapture(100)
    for _ in range(1000):
        capture.add(b"0123456789")
    assert capture.total == 10_000 and capture.cut == 9_900
    assert len(capture.text("stdout")) < 200


def test_rlimits_apply_in_the_child(tmp_path: Path) -> None:
    limits = ExecLimits(open_files=64, file_size_mb=3, cpu_s=7)
    script = (
        "import resource as r; "
        "print(r.getrlimit(r.RLIMIT_NOFILE)[0], r.getrlimit(r.RLIMIT_FSIZE)[0], r.getrlimit(r.RLIMIT_CPU)[0])"
    )
    outcome = run_process(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=ENV,
        timeout_s=10,
        output_chars=1000,
        rlimits=rlimits_for(limits),
    )
    assert outcome.stdout.split() == ["64", str(3 * 1024 * 1024), "7"]


def test_a_limited_command_reads_dev_null_and_a_missing_program_still_fails_to_start(tmp_path: Path) -> None:
    # With limits the command first passes a gate that waits on stdin for the go: the
    # command itself must still see /dev/null there, and a bad program must not pass for
    # an exit code.
    limits = rlimits_for(ExecLimits(open_files=64))
    outcome = run_process(
        ["bash", "-c", "readlink /proc/self/fd/0; cat; ulimit -n"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=10,
        output_chars=1000,
        rlimits=limits,
    )
    assert (outcome.exit_code, outcome.stdout.split()) == (0, ["/dev/null", "64"])
    for program in ("/nonexistent/tool", "no-such-program-here", "./missing"):
        with pytest.raises(SpawnFailed, match="could not start"):
            run_process([program], cwd=tmp_path, env=ENV, timeout_s=5, output_chars=100, rlimits=limits)
    assert live_processes_with("no-such-program-here") == []


def test_rlimits_set_nproc_only_when_asked() -> None:
    assert resource.RLIMIT_NPROC not in dict(rlimits_for(ExecLimits()))
    assert dict(rlimits_for(ExecLimits(), nproc=500))[resource.RLIMIT_NPROC] == 500


def test_a_missing_program_raises_spawn_failed(tmp_path: Path) -> None:
    with pytest.raises(SpawnFailed, match="could not start"):
        run_process(["/nonexistent/tool"], cwd=tmp_path, env=ENV, timeout_s=5, output_chars=100)


def test_kill_from_another_thread_marks_the_outcome(tmp_path: Path) -> None:
    def kill_at_once(handle: RunningProcess) -> None:
        handle.kill()

    outcome = run_process(
        ["bash", "-c", f"sleep {marker()}"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=20,
        output_chars=100,
        on_start=kill_at_once,
    )
    assert outcome.stopped_by == "shutdown" and not outcome.timed_out
    assert outcome.exit_code == 128 + signal.SIGKILL


def test_a_limited_command_stopped_before_its_gate_opens_never_runs(tmp_path: Path) -> None:
    # Joining the cgroup can take the kernel a second under load: a cancel in that time must
    # kill the gate at once, so the supervisor is handed the process before the gate opens.
    parent_limit = resource.getrlimit(resource.RLIMIT_NOFILE)
    seen: list[tuple[int, int]] = []

    def stop_at_once(handle: RunningProcess) -> None:
        seen.append(resource.prlimit(handle.proc.pid, resource.RLIMIT_NOFILE))
        handle.interrupt("cancelled")

    outcome = run_process(
        ["bash", "-c", "touch ran"],
        cwd=tmp_path,
        env=ENV,
        timeout_s=20,
        output_chars=100,
        rlimits=rlimits_for(ExecLimits(open_files=64)),
        on_start=stop_at_once,
    )
    assert seen == [parent_limit]  # the gate had not lowered the limits yet
    assert outcome.stopped_by == "cancelled" and outcome.exit_code == 128 + signal.SIGKILL
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (128 + signal.SIGXCPU, "CPU time limit of 30 s"),
        (128 + signal.SIGXFSZ, "file size limit of 100 MB"),
        (128 + signal.SIGKILL, "SIGKILL"),
        (128 + signal.SIGTERM, "SIGTERM"),
    ],
)
def test_signal_note_names_the_limit(code: int, expected: str) -> None:
    note = signal_note(code, ExecLimits())
    assert note is not None and expected in note


def test_ordinary_exit_codes_have_no_note() -> None:
    assert signal_note(1, ExecLimits()) is None
    assert signal_note(127, ExecLimits()) is None


def test_exit_is_noticed_without_pidfd_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # macOS has no pidfd: a thread waits for the process instead.
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    tag = marker()
    done = run_process(
        ["bash", "-c", f"sleep {tag} & echo quick"], cwd=tmp_path, env=ENV, timeout_s=20, output_chars=100
    )
    assert (done.exit_code, done.stdout, done.timed_out) == (0, "quick\n", False)
    late = run_process(["bash", "-c", f"sleep {tag}"], cwd=tmp_path, env=ENV, timeout_s=0.3, output_chars=100)
    assert late.timed_out
    assert live_processes_with(f"sleep {tag}") == []


def test_user_process_count_includes_this_process() -> None:
    assert user_process_count() >= 1
