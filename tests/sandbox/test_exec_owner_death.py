"""What a process running commands leaves behind when it is killed with SIGKILL: no command
(its runs end with it, as they do when the sandbox stops), and cgroups that the next sandbox
removes, never touching a live process's groups."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench._process_groups import live_processes_with

from tests.sandbox.conftest import backend_class, marker, wait_until
from toolcards.sandbox._actor import LocalSandboxActor
from toolcards.sandbox._cgroup import _STALE_AFTER_S, cgroup_support, remove_stale_groups
from toolcards.sandbox._local import launcher_argv

OWNER = """
import sys, threading, time
import toolcards
from toolcards.sandbox import ExecTool

team = toolcards.Team("owner")
card = ExecTool(mode=sys.argv[1], allowed_commands=[], max_background_runs=1)
tools = {tool.name: tool for tool in team.member("Ann").factory(card).tools()}
tag = sys.argv[2]
started = tools["exec_command"].call_sync({"cmd": f"sh -c 'sleep {tag}2 & sleep {tag}2'", "background": True})
print(started.replace("\\n", " "), flush=True)
threading.Thread(target=tools["exec_command"].call_sync, args=({"cmd": f"sleep {tag}1", "timeout_s": 60},)).start()
time.sleep(120)
"""


def groups_of(pid: int) -> list[Path]:
    """The cgroup directories named after ``pid``, in every hierarchy this process uses."""
    return [path for parent in cgroup_support().parents for path in parent.glob(f"toolcards-{pid}-*")]


def made_long_ago(path: Path) -> None:
    """Date ``path`` back past the age a stale group must have (its modification time says when it was made)."""
    old = os.stat(path).st_mtime - _STALE_AFTER_S - 60
    os.utime(path, (old, old))


@pytest.fixture
def kill_leftovers() -> Iterator[list[str]]:
    """Tags whose processes are killed after the test, whatever it found."""
    tags: list[str] = []
    yield tags
    for tag in tags:
        for pid in live_processes_with(f"sleep {tag}"):
            os.kill(pid, signal.SIGKILL)


def test_the_launcher_kills_its_group_at_the_end_of_its_lifeline(kill_leftovers: list[str]) -> None:
    env = {"PATH": os.environ["PATH"]}
    # The command reads /dev/null, not the lifeline, and its status is passed on.
    quick = subprocess.Popen(
        launcher_argv("cat; exit 7", watch_lifeline=True), stdin=subprocess.PIPE, start_new_session=True, env=env
    )
    assert quick.wait(timeout=30) == 7
    assert quick.stdin is not None
    quick.stdin.close()
    tag = marker()
    kill_leftovers.append(tag)
    slow = subprocess.Popen(
        launcher_argv(f"sleep {tag} & sleep {tag}; echo never", watch_lifeline=True),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
        env=env,
    )
    assert slow.stdin is not None and slow.stdout is not None
    assert wait_until(lambda: len(live_processes_with(f"sleep {tag}")) >= 2)
    slow.stdin.close()  # what the kernel does when the process holding it dies
    assert slow.wait(timeout=30) == -signal.SIGKILL
    assert wait_until(lambda: not live_processes_with(f"sleep {tag}"))
    assert slow.stdout.read() == b""
    slow.stdout.close()


@pytest.mark.parametrize("mode", ["local", "bwrap"])
def test_the_commands_of_a_killed_owner_end_with_it(mode: str, workspace: Path, kill_leftovers: list[str]) -> None:
    backend_class(mode)
    tag = marker()
    kill_leftovers.append(tag)
    owner = subprocess.Popen([sys.executable, "-c", OWNER, mode, tag], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and "Started background run" in owner.stdout.readline()
        # The foreground command's sleep and the run's.
        assert wait_until(lambda: bool(live_processes_with(f"sleep {tag}1")), timeout_s=30)
        assert wait_until(lambda: bool(live_processes_with(f"sleep {tag}2")), timeout_s=30)
    finally:
        owner.kill()
        owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()
    assert wait_until(lambda: not live_processes_with(f"sleep {tag}"))
    left = groups_of(owner.pid)
    if cgroup_support().version is None:
        return
    # Its cgroups stay behind (nobody was left to remove them), empty: the next sandbox
    # removes them once they are old enough for no live process in any pid namespace to own them.
    assert left
    LocalSandboxActor(workspace)
    assert all(path.exists() for path in left)  # too young yet
    for path in left:
        made_long_ago(path)
    LocalSandboxActor(workspace)
    assert not any(path.exists() for path in left)


def test_only_old_empty_groups_of_dead_processes_are_removed(workspace: Path) -> None:
    support = cgroup_support()
    if support.version is None:
        pytest.skip(f"no cgroups here: {support.reason}")
    parent = support.parents[0]
    gone = subprocess.Popen(["true"])
    gone.wait()
    alive = subprocess.Popen(["sleep", marker()])
    holder = subprocess.Popen(["sleep", marker()])
    made: list[Path] = []
    try:
        stale = parent / f"toolcards-{gone.pid}-1"
        young = parent / f"toolcards-{gone.pid}-2"
        busy = parent / f"toolcards-{gone.pid}-3"  # a survivor of its owner still runs in it
        live = parent / f"toolcards-{alive.pid}-1"
        probe = parent / f"toolcards-probe-{gone.pid}-4"
        other = parent / f"someone-{gone.pid}-1"
        for path in (stale, young, busy, live, probe, other):
            path.mkdir()
            made.append(path)
            if path is not young:
                made_long_ago(path)
        (busy / "cgroup.procs").write_text(str(holder.pid))
        remove_stale_groups()
        assert not stale.exists() and not probe.exists()
        assert young.exists() and busy.exists() and live.exists() and other.exists()
    finally:
        for process in (alive, holder):
            process.kill()
            process.wait()
        for path in made:
            if path.exists():
                wait_until(lambda path=path: not (path / "cgroup.procs").read_text().strip())
                path.rmdir()
