"""Per-command cgroups: limits written, members killed, the group removed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from toolcards.sandbox._cgroup import CommandCgroup, cgroup_support

needs_cgroup = pytest.mark.skipif(
    cgroup_support().version is None, reason=f"no cgroup support here: {cgroup_support().reason}"
)


def test_support_says_why_when_missing() -> None:
    support = cgroup_support()
    assert support.version in (1, 2) or support.reason


@needs_cgroup
def test_group_limits_processes_and_is_removed() -> None:
    group = CommandCgroup.create(max_processes=7, memory_bytes=64 * 1024 * 1024)
    assert group is not None
    dirs = group.dirs
    pids_max = next(path / "pids.max" for path in dirs if (path / "pids.max").exists())
    assert pids_max.read_text().strip() == "7"
    group.remove()
    assert not any(path.exists() for path in dirs)


@needs_cgroup
def test_kill_all_stops_a_process_that_left_its_session() -> None:
    group = CommandCgroup.create(max_processes=16, memory_bytes=64 * 1024 * 1024)
    assert group is not None
    files = group.procs_files

    def join() -> None:
        for path in files:
            with open(path, "w") as handle:
                handle.write(str(os.getpid()))

    # The child setsid()s: a process-group kill would miss it, the cgroup does not.
    child = subprocess.Popen(
        [sys.executable, "-c", "import os, time; os.setsid(); time.sleep(60)"],
        preexec_fn=join,  # noqa: PLW1509 - the test is single-threaded here
    )
    try:
        group.kill_all()
        assert child.wait(timeout=5) == -9
    finally:
        child.kill()
        child.wait()
        group.remove()


@needs_cgroup
def test_limit_hits_are_empty_for_a_quiet_group() -> None:
    group = CommandCgroup.create(max_processes=16, memory_bytes=64 * 1024 * 1024)
    assert group is not None
    try:
        assert group.limit_hits(16, 64) == []
    finally:
        group.remove()
