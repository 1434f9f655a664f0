"""The run registry on its own: the log's offsets, ownership, limits, what is kept."""

from __future__ import annotations

import pytest

from toolcards.errors import RetriableError
from toolcards.sandbox import ExecResult, RunLog, RunRegistry


def test_the_log_reads_by_absolute_offsets_across_chunks() -> None:
    log = RunLog(keep_chars=100)
    log.add("stdout", b"hello ")
    log.add("stderr", b"oops\n")
    log.add("stdout", b"world\n")
    assert log.read(0, 1000) == (0, "hello oops\nworld\n", 17)
    assert log.read(6, 4) == (6, "oops", 17)
    assert log.read(17, 10) == (17, "", 17)
    assert log.read(500, 10) == (17, "", 17)


def test_the_log_drops_the_oldest_and_offsets_do_not_shift() -> None:
    log = RunLog(keep_chars=10)
    for index in range(5):
        log.add("stdout", f"{index:04d}\n".encode())  # 5 characters each
    start, text, end = log.read(0, 100)
    assert (start, end) == (15, 25)
    assert text == "0003\n0004\n"
    assert log.read(17, 3) == (17, "03\n", 25)


def test_a_character_split_across_chunks_is_kept_whole() -> None:
    log = RunLog(keep_chars=100)
    encoded = "héllo".encode()
    log.add("stdout", encoded[:2])
    log.add("stdout", encoded[2:])
    log.add("stderr", b"\xff")
    log.close()
    assert log.read(0, 100)[1] == "héllo\N{REPLACEMENT CHARACTER}"


def test_a_run_is_its_owners_only() -> None:
    registry = RunRegistry()
    run = registry.add("Alice", "sleep 1", "", keep_chars=100, max_running=2)
    assert registry.get("Alice", run.run_id) is run
    with pytest.raises(RetriableError, match=r"No background run 'r1' of yours\. You have no background runs\."):
        registry.get("Bob", run.run_id)
    with pytest.raises(RetriableError, match=r"No background run 'r7' of yours\. Your runs: r1\."):
        registry.get("Alice", "r7")


def test_each_owner_has_a_limit_of_runs_not_ended() -> None:
    registry = RunRegistry()
    first = registry.add("Alice", "npm run dev", "", keep_chars=100, max_running=1)
    with pytest.raises(RetriableError, match=r"limited to 1 at once; yours still running: r1 `npm run dev`"):
        registry.add("Alice", "sleep 5", "", keep_chars=100, max_running=1)
    registry.add("Bob", "sleep 5", "", keep_chars=100, max_running=1)  # Bob has his own
    first.finish(ExecResult(command="npm run dev", exit_code=0))
    registry.add("Alice", "sleep 5", "", keep_chars=100, max_running=1)
    with pytest.raises(RetriableError, match="Background runs are off for this card"):
        registry.add("Carol", "sleep 5", "", keep_chars=100, max_running=0)


def test_only_the_newest_finished_runs_are_kept() -> None:
    registry = RunRegistry(keep_finished=2)
    for index in range(4):
        run = registry.add("Alice", f"echo {index}", "", keep_chars=100, max_running=1)
        run.finish(ExecResult(command=run.command, exit_code=0, stdout=f"{index}\n"))
    assert [run.run_id for run in registry.owned_by("Alice")] == ["r3", "r4"]
    # Output handed over only at the end (a backend that does not stream) is in the log.
    assert registry.get("Alice", "r4").output(0, 100).text == "3\n"


def test_a_stop_before_the_spawn_is_carried_out_when_it_is_attached() -> None:
    registry = RunRegistry()
    run = registry.add("Alice", "sleep 5", "", keep_chars=100, max_running=1)
    assert run.status().state == "starting"
    assert run.stop()
    killed: list[str] = []
    run.attach(killed.append)
    assert killed == ["stop requested"]
    run.finish(ExecResult(command="sleep 5", exit_code=137, stopped="stop requested"))
    assert not run.stop()  # ended already
    status = run.status()
    assert status.state == "stopped" and status.ending == "stopped: stop requested"
    assert run.unseen_end
    run.status(seen=True)
    assert not run.unseen_end
