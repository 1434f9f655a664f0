"""The workspace's disk quota: the tree's usage, the watchdog, and real commands over it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.sandbox.conftest import SandboxRef, StartSandbox, run_via_proxy, wait_until
from toolcards import ToolFactory
from toolcards.errors import RetriableError
from toolcards.fs import _tree_usage as tree_usage_module
from toolcards.sandbox import ExecLimits
from toolcards.sandbox._quota import MIB, DiskWatch, QuotaStart, WorkspaceUsage, tree_usage
from toolcards.sandbox._tool import ExecCommandParam, ExecTool
from toolcards.testing import FakeObserver


def write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))


def test_usage_counts_allocated_space_of_nested_files(tmp_path: Path) -> None:
    write(tmp_path / "a.bin", MIB)
    write(tmp_path / "deep" / "er" / "b.bin", 2 * MIB)
    usage = tree_usage(tmp_path)
    assert usage.complete and usage.entries == 4  # a.bin, deep, er, b.bin
    assert 3 * MIB <= usage.bytes < 3 * MIB + 64 * 1024


def test_hard_links_count_once_and_symlinks_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "big.bin", 4 * MIB)
    tree = tmp_path / "tree"
    write(tree / "one.bin", MIB)
    os.link(tree / "one.bin", tree / "two.bin")
    (tree / "escape").symlink_to(outside)
    assert tree_usage(tree).bytes < 2 * MIB


def test_a_walk_stops_at_its_entry_cap(tmp_path: Path) -> None:
    for index in range(20):
        (tmp_path / f"f{index}").touch()
    usage = tree_usage(tmp_path, max_entries=5)
    assert not usage.complete and usage.entries == 5


def test_a_missing_tree_is_empty(tmp_path: Path) -> None:
    assert tree_usage(tmp_path / "nope").bytes == 0


def test_the_quota_at_start_gives_what_remains(tmp_path: Path) -> None:
    write(tmp_path / "a.bin", 3 * MIB)
    quota = WorkspaceUsage(tmp_path).at_start(10)
    assert quota.quota_bytes == 10 * MIB
    assert 6 * MIB < quota.remaining_bytes <= 7 * MIB
    assert quota.limit_bytes == 10 * MIB


def test_a_tree_already_over_its_quota_may_shrink_but_not_grow() -> None:
    quota = QuotaStart(start_bytes=30 * MIB, quota_bytes=10 * MIB)
    assert (quota.remaining_bytes, quota.limit_bytes) == (0, 30 * MIB)


def test_the_watchdog_calls_stop_once_the_tree_passes_the_limit(tmp_path: Path) -> None:
    usage = WorkspaceUsage(tmp_path)
    watch = DiskWatch(usage, usage.at_start(2))
    stopped: list[bool] = []
    watch.start(lambda: stopped.append(True))
    write(tmp_path / "a.bin", 3 * MIB)
    assert wait_until(lambda: bool(stopped), timeout_s=10)  # the watchdog, not the final check
    watch.close()
    assert watch.exceeded and stopped == [True]
    assert watch.written_bytes >= 3 * MIB


def test_the_final_check_catches_growth_between_ticks(tmp_path: Path) -> None:
    usage = WorkspaceUsage(tmp_path)
    watch = DiskWatch(usage, usage.at_start(1))
    write(tmp_path / "a.bin", 2 * MIB)  # before the watchdog ever ran
    watch.close()
    assert watch.exceeded


def test_a_shrink_since_the_last_walk_is_seen_by_the_next_command(tmp_path: Path) -> None:
    usage = WorkspaceUsage(tmp_path)
    write(tmp_path / "a.bin", 8 * MIB)
    assert usage.at_start(10).remaining_bytes <= 2 * MIB
    os.remove(tmp_path / "a.bin")
    assert usage.at_start(10).remaining_bytes > 9 * MIB


def test_far_from_the_quota_a_shrink_is_walked_only_when_the_spacing_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 8 MB used of 1,024 with 100 MB files: no walk can change the command's limits, so
    # one is made only as often as the spacing lets walks happen.
    usage = WorkspaceUsage(tmp_path)
    write(tmp_path / "a.bin", 8 * MIB)
    assert usage.at_start(1_024, file_size_mb=100).start_bytes >= 8 * MIB
    os.remove(tmp_path / "a.bin")
    monkeypatch.setattr(tree_usage_module, "WALK_SPACING", 1e9)
    assert usage.at_start(1_024, file_size_mb=100).start_bytes >= 8 * MIB  # the remembered bound
    monkeypatch.setattr(tree_usage_module, "WALK_SPACING", 0.0)
    assert usage.at_start(1_024, file_size_mb=100).start_bytes < MIB


def test_near_the_quota_a_shrink_is_always_walked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree_usage_module, "WALK_SPACING", 1e9)
    usage = WorkspaceUsage(tmp_path)
    write(tmp_path / "a.bin", 8 * MIB)
    assert usage.at_start(10, file_size_mb=100).remaining_bytes <= 2 * MIB
    os.remove(tmp_path / "a.bin")
    assert usage.at_start(10, file_size_mb=100).remaining_bytes > 9 * MIB


# -- real commands ---------------------------------------------------------------------------

FIFTEEN_FILES = "for i in $(seq 15); do head -c 10M /dev/urandom > f$i.bin || exit 9; done"


def test_many_files_over_the_quota_are_stopped(sandbox: StartSandbox, workspace: Path) -> None:
    result = run_via_proxy(sandbox(ExecLimits(disk_mb=50), timeout_s=60), FIFTEEN_FILES)
    assert result.stopped == "disk quota", result.render()
    note = next(note for note in result.notes if "disk quota" in note)
    assert "50 MB disk quota" in note and "MB were written" in note and "delete files" in note
    written = sum(path.stat().st_size for path in workspace.glob("f*.bin"))
    assert written < 150 * MIB


def test_a_command_under_the_quota_is_unaffected(sandbox: StartSandbox, workspace: Path) -> None:
    result = run_via_proxy(sandbox(ExecLimits(disk_mb=50)), "head -c 10M /dev/zero > ok.bin && echo done")
    assert (result.exit_code, result.stdout, result.stopped) == (0, "done\n", None)
    assert (workspace / "ok.bin").stat().st_size == 10 * MIB


def test_one_file_stops_exactly_at_what_remains(sandbox: StartSandbox, workspace: Path) -> None:
    write(workspace / "old.bin", 8 * MIB)
    result = run_via_proxy(sandbox(ExecLimits(disk_mb=10)), "head -c 50M /dev/zero > big.bin")
    assert result.exit_code == 128 + signal.SIGXFSZ
    assert result.stopped == "disk quota"
    assert any("what remained of the workspace's 10 MB disk quota" in note for note in result.notes)
    assert (workspace / "big.bin").stat().st_size <= 2 * MIB


def test_the_model_reads_a_retriable_error_saying_what_to_do(alice: FakeObserver) -> None:
    run = ToolFactory(
        [ExecTool(mode="local", limits=ExecLimits(disk_mb=20), allowed_commands=[])], observer=alice
    ).get_commands()[ExecCommandParam]
    with pytest.raises(RetriableError) as caught:
        run(cmd="for i in 1 2 3 4 5 6; do head -c 10M /dev/zero > f$i; done")
    message = str(caught.value)
    assert "disk quota" in message and "delete files you no longer need" in message
    assert "[BEGIN UNTRUSTED" in message


THREE_FILES = "for i in 1 2 3; do head -c 10M /dev/urandom > f$i.bin || exit 9; done"


def fill_past_the_quota(ref: SandboxRef) -> None:
    result = run_via_proxy(ref, THREE_FILES)
    assert result.stopped == "disk quota", result.render()


def test_a_sandboxed_rm_after_a_quota_stop_frees_the_quota_for_the_next_command(
    sandbox: StartSandbox, workspace: Path
) -> None:
    ref = sandbox(ExecLimits(disk_mb=20), timeout_s=60)
    fill_past_the_quota(ref)
    removed = run_via_proxy(ref, "rm -f f*.bin")
    assert removed.exit_code == 0, removed.render()
    result = run_via_proxy(ref, "head -c 5M /dev/zero > small.bin && echo done")
    assert (result.exit_code, result.stdout, result.stopped) == (0, "done\n", None), result.render()
    assert (workspace / "small.bin").stat().st_size == 5 * MIB


def test_a_delete_outside_the_sandbox_after_a_quota_stop_is_seen_by_the_next_command(
    sandbox: StartSandbox, workspace: Path
) -> None:
    ref = sandbox(ExecLimits(disk_mb=20), timeout_s=60)
    fill_past_the_quota(ref)
    for path in workspace.glob("f*.bin"):
        os.remove(path)
    result = run_via_proxy(ref, "head -c 5M /dev/zero > small.bin && echo done")
    assert (result.exit_code, result.stdout, result.stopped) == (0, "done\n", None), result.render()
    assert (workspace / "small.bin").stat().st_size == 5 * MIB
