"""A keyed ``exec_command`` sent again is not run again: the retry gets the first answer, or
hears what became of the first call, in whichever process of the team it arrives."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from bench._process_groups import live_processes_with

import toolcards
from tests.sandbox.conftest import marker, wait_until
from toolcards.core._cancel import CancelToken, cancelling
from toolcards.core._idempotency import CallKey
from toolcards.core._tool import Tool
from toolcards.errors import CallCancelled, OutcomeUnknown, RetriableError, StoreError, ToolFailed, ToolTimeout
from toolcards.fs._locations import workspace_dir
from toolcards.sandbox import ExecTool
from toolcards.sandbox._command_calls import PURGE_EVERY, Claim, CommandCalls
from toolcards.sandbox._run_numbers import StoredRunNumbers
from toolcards.store import MemoryStore, default_store
from toolcards.store._base import Transaction
from toolcards.store._calls import CALL_MAX_AGE_S, CALLS

TEAM = "once"
NAMESPACE = f"{TEAM}/#SandboxActor"
REPLAYED = "This call was already applied; the command was not run again."

RETRY_ELSEWHERE = """
import sys
import toolcards
from toolcards.sandbox import ExecTool

# Another process of the team: @Ann is held by the test's, so it joins as @Ann-2 and keys its
# calls by the name its client asked for, as a server does.
with toolcards.Team("once") as team:
    card = ExecTool(mode="local", allowed_commands=[])
    tools = {tool.name: tool for tool in team.member("Ann-2").factory(card).tools()}
    try:
        answer = tools["exec_command"].call_sync(
            {"cmd": sys.argv[1]}, idempotency_key=sys.argv[2], idempotency_scope="@Ann"
        )
        print(answer, flush=True)
    except Exception as error:
        print(type(error).__name__, error, flush=True)
"""


@pytest.fixture
def team() -> Iterator[toolcards.Team]:
    with toolcards.Team(TEAM) as running:
        yield running


def exec_tools(team: toolcards.Team, member: str = "Ann", **fields: object) -> dict[str, Tool]:
    fields.setdefault("allowed_commands", [])
    card = ExecTool(mode="local", **fields)  # type: ignore[arg-type]
    return {tool.name: tool for tool in team.member(member).factory(card).tools()}


def lines(name: str) -> list[str]:
    path = workspace_dir(TEAM) / name
    return path.read_text().splitlines() if path.exists() else []


def run_id_of(started: str) -> str:
    return started.split("Started background run ", 1)[1].split(" ", 1)[0]


def record_of(key: str) -> object:
    return default_store().get(NAMESPACE, CALLS, [f"@Ann|exec_command|{key}"]).get(f"@Ann|exec_command|{key}")


def test_a_command_sent_again_with_its_key_runs_once(team: toolcards.Team) -> None:
    exec_command = exec_tools(team)["exec_command"]
    first = exec_command.call_sync({"cmd": "echo run >> count.txt; wc -l < count.txt"}, idempotency_key="k1")
    again = exec_command.call_sync({"cmd": "echo run >> count.txt; wc -l < count.txt"}, idempotency_key="k1")
    assert lines("count.txt") == ["run"]
    assert "exit code: 0\nstdout:\n1" in first and REPLAYED not in first
    assert f"{REPLAYED}\nexit code: 0\nstdout:\n1" in again
    # Another key is another call.
    exec_command.call_sync({"cmd": "echo run >> count.txt"}, idempotency_key="k2")
    assert lines("count.txt") == ["run", "run"]


def test_a_key_reused_with_other_arguments_is_refused_and_not_run(team: toolcards.Team) -> None:
    exec_command = exec_tools(team)["exec_command"]
    exec_command.call_sync({"cmd": "echo one >> log.txt"}, idempotency_key="k")
    with pytest.raises(ToolFailed, match="reuses the idempotency key of an earlier call with other arguments"):
        exec_command.call_sync({"cmd": "echo two >> log.txt"}, idempotency_key="k")
    assert lines("log.txt") == ["one"]


def test_a_retry_reaching_another_process_is_answered_not_run(team: toolcards.Team) -> None:
    exec_command = exec_tools(team)["exec_command"]
    cmd = "echo run >> count.txt; echo printed"
    assert "printed" in exec_command.call_sync({"cmd": cmd}, idempotency_key="k")
    retry = subprocess.run(
        [sys.executable, "-c", RETRY_ELSEWHERE, cmd, "k"], capture_output=True, text=True, timeout=120, check=True
    )
    assert REPLAYED in retry.stdout and "printed" in retry.stdout
    assert lines("count.txt") == ["run"]


def test_an_error_answer_is_replayed_as_the_same_error(team: toolcards.Team) -> None:
    exec_command = exec_tools(team)["exec_command"]
    with pytest.raises(ToolTimeout) as first:
        exec_command.call_sync({"cmd": "echo run >> count.txt; sleep 5", "timeout_s": 0.5}, idempotency_key="k")
    with pytest.raises(ToolTimeout) as again:
        exec_command.call_sync({"cmd": "echo run >> count.txt; sleep 5", "timeout_s": 0.5}, idempotency_key="k")
    assert REPLAYED not in str(first.value)
    assert str(again.value).startswith(f"{REPLAYED}\nexec_command: the command did not finish in time")
    # A non-zero exit is an answer too.
    exec_command.call_sync({"cmd": "echo run >> count.txt; exit 3"}, idempotency_key="k3")
    assert "exit code: 3" in exec_command.call_sync({"cmd": "echo run >> count.txt; exit 3"}, idempotency_key="k3")
    assert lines("count.txt") == ["run", "run"]


def test_a_background_start_sent_again_gives_the_same_run(team: toolcards.Team) -> None:
    tools = exec_tools(team, max_background_runs=2)
    cmd = f"sleep {marker()}"
    first = tools["exec_command"].call_sync({"cmd": cmd, "background": True}, idempotency_key="k")
    again = tools["exec_command"].call_sync({"cmd": cmd, "background": True}, idempotency_key="k")
    run_id = run_id_of(first)
    assert run_id == "r1"
    assert f"{REPLAYED}\nStarted background run {run_id} " in again
    with pytest.raises(RetriableError, match=rf"Your runs: {run_id}\."):  # one run
        tools["exec_status"].call_sync({"run_id": "r999"})
    # Run ids stay consecutive although the keyed calls' records share the namespace.
    other = run_id_of(tools["exec_command"].call_sync({"cmd": cmd, "background": True}, idempotency_key="k2"))
    assert other == "r2"
    for run in (run_id, other):
        tools["exec_stop"].call_sync({"run_id": run})


def test_run_numbers_count_runs_only_and_go_on_after_a_drop() -> None:
    store = MemoryStore()
    claim = CommandCalls(store, "t").start(
        CallKey(key="@Ann|exec_command|k", digest="d"), deadline_s=1.0, background=False, check=""
    )
    assert isinstance(claim, Claim)
    claim.record("exit code: 0\n(no output)", None)
    numbers = StoredRunNumbers(store, "t")
    assert [numbers(), numbers()] == [1, 2]
    store.drop("t/#SandboxActor")
    assert numbers() > 2


def test_a_refusal_before_the_start_leaves_no_record_so_the_retry_runs(team: toolcards.Team) -> None:
    tools = exec_tools(team, max_background_runs=1)
    exec_command = tools["exec_command"]
    with pytest.raises(RetriableError, match="does not exist"):
        exec_command.call_sync({"cmd": "echo run >> ../count.txt", "cwd": "sub"}, idempotency_key="k")
    assert record_of("k") is None
    (workspace_dir(TEAM) / "sub").mkdir()
    assert REPLAYED not in exec_command.call_sync(
        {"cmd": "echo run >> ../count.txt", "cwd": "sub"}, idempotency_key="k"
    )
    assert lines("count.txt") == ["run"]
    # Too many background runs: refused, not recorded.
    sleeping = f"sleep {marker()}"
    run_id = run_id_of(exec_command.call_sync({"cmd": sleeping, "background": True}, idempotency_key="b1"))
    with pytest.raises(RetriableError, match="limited to 1 at once"):
        exec_command.call_sync({"cmd": "echo run >> count.txt", "background": True}, idempotency_key="b2")
    assert record_of("b2") is None
    tools["exec_stop"].call_sync({"run_id": run_id})


def test_a_retry_while_the_first_call_runs_does_not_start_it_again(team: toolcards.Team) -> None:
    exec_command = exec_tools(team)["exec_command"]
    tag = marker()
    cmd = f"echo run >> count.txt; sleep {tag}"
    first = threading.Thread(
        target=lambda: exec_command.call_sync({"cmd": cmd, "timeout_s": 60}, idempotency_key="k"), daemon=True
    )
    first.start()
    try:
        assert wait_until(lambda: lines("count.txt") == ["run"], timeout_s=30)
        again = exec_command.call_sync({"cmd": cmd, "timeout_s": 60}, idempotency_key="k")
        assert "still running from its first call" in again and "not started again" in again
    finally:
        for pid in live_processes_with(f"sleep {tag}"):
            os.kill(pid, signal.SIGKILL)
        first.join(timeout=30)
    assert lines("count.txt") == ["run"]


def test_a_command_cancelled_while_it_ran_is_not_run_again(team: toolcards.Team) -> None:
    exec_command = exec_tools(team)["exec_command"]
    tag = marker()
    cmd = f"echo run >> count.txt; sleep {tag}"
    token = CancelToken()
    outcome: list[BaseException] = []

    def call() -> None:
        with cancelling(token):
            try:
                exec_command.call_sync({"cmd": cmd, "timeout_s": 60}, idempotency_key="k")
            except BaseException as error:
                outcome.append(error)

    first = threading.Thread(target=call, daemon=True)
    first.start()
    assert wait_until(lambda: lines("count.txt") == ["run"], timeout_s=30)
    token.cancel()
    first.join(timeout=30)
    assert len(outcome) == 1 and isinstance(outcome[0], CallCancelled)
    with pytest.raises(ToolFailed, match="cancelled it while the command ran") as again:
        exec_command.call_sync({"cmd": cmd, "timeout_s": 60}, idempotency_key="k")
    assert str(again.value).startswith(REPLAYED)
    assert lines("count.txt") == ["run"] and not live_processes_with(f"sleep {tag}")


KILLED_OWNER = """
import sys
import toolcards
from toolcards.sandbox import ExecTool

with toolcards.Team("once") as team:
    card = ExecTool(mode="local", allowed_commands=[], timeout_s=120)
    tools = {tool.name: tool for tool in team.member("Ann").factory(card).tools()}
    cmd = "echo run >> count.txt; sleep " + sys.argv[1]  # its own command line names no sleep
    tools["exec_command"].call_sync({"cmd": cmd}, idempotency_key="k")
"""


def test_a_command_whose_server_was_killed_is_not_run_again(team: toolcards.Team) -> None:
    tag = marker()
    cmd = f"echo run >> count.txt; sleep {tag}"
    owner = subprocess.Popen([sys.executable, "-c", KILLED_OWNER, tag])
    try:
        assert wait_until(lambda: lines("count.txt") == ["run"], timeout_s=60)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    assert wait_until(lambda: not live_processes_with(f"sleep {tag}"), timeout_s=30)
    # The killed process still holds @Ann on the roster: the retry joins as @Ann-2.
    exec_command = exec_tools(team, member="Ann-2", timeout_s=120)["exec_command"]
    again = exec_command.call_sync({"cmd": cmd}, idempotency_key="k", idempotency_scope="@Ann")
    assert "started before its server stopped, and its end was not recorded" in again
    assert "not run again" in again and "new idempotency key" in again
    assert not live_processes_with(f"sleep {tag}")
    assert lines("count.txt") == ["run"]


def test_calls_without_a_key_do_not_touch_the_store(team: toolcards.Team) -> None:
    tools = exec_tools(team)
    tools["exec_command"].call_sync({"cmd": "true"}, idempotency_key="k")  # the namespace exists
    before = default_store().version(NAMESPACE)
    for _ in range(3):
        tools["exec_command"].call_sync({"cmd": "echo run >> count.txt"})
    with pytest.raises(RetriableError):
        tools["exec_command"].call_sync({"cmd": "true", "cwd": "missing"})
    assert default_store().version(NAMESPACE) == before
    assert lines("count.txt") == ["run"] * 3


class FailingStore(MemoryStore):
    """A store whose writes after the first ``good`` fail: ``lost`` commits them and then
    loses the answer (:class:`OutcomeUnknown`), otherwise they fail before committing."""

    def __init__(self, good: int, *, lost: bool = False) -> None:
        super().__init__()
        self.good, self.lost = good, lost

    @contextlib.contextmanager
    def write(self, namespace: str, since: int | None) -> Iterator[Transaction]:
        self.good -= 1
        if self.good < 0 and not self.lost:
            raise StoreError("the store is out of reach for the moment", transient=True)
        with super().write(namespace, since) as txn:
            yield txn
        if self.good < 0:
            raise OutcomeUnknown("the answer to COMMIT was lost")


def keyed_with(team: toolcards.Team, store: MemoryStore) -> Tool:
    card = ExecTool(mode="local", allowed_commands=[])
    exec_command = {tool.name: tool for tool in team.member("Ann").factory(card).tools()}["exec_command"]
    card._calls = CommandCalls(store, TEAM)
    return exec_command


def test_an_answer_the_store_could_not_record_is_still_returned_and_not_run_again(team: toolcards.Team) -> None:
    store = FailingStore(good=1)
    exec_command = keyed_with(team, store)
    assert "exit code: 0" in exec_command.call_sync({"cmd": "echo run >> count.txt"}, idempotency_key="k")
    store.good = 1  # the store is back
    again = exec_command.call_sync({"cmd": "echo run >> count.txt"}, idempotency_key="k")
    assert "its end could not be recorded: the command was not run again" in again
    assert lines("count.txt") == ["run"]


def test_a_start_whose_commit_was_lost_is_taken_back_and_runs_nothing(team: toolcards.Team) -> None:
    store = FailingStore(good=0, lost=True)
    exec_command = keyed_with(team, store)
    with pytest.raises(StoreError) as refused:
        exec_command.call_sync({"cmd": "echo run >> count.txt"}, idempotency_key="k")
    assert refused.value.transient and not isinstance(refused.value, OutcomeUnknown)
    assert lines("count.txt") == [] and not store.get(NAMESPACE, CALLS, ["@Ann|exec_command|k"])
    store.lost = False
    store.good = 2
    assert REPLAYED not in exec_command.call_sync({"cmd": "echo run >> count.txt"}, idempotency_key="k")
    assert lines("count.txt") == ["run"]


def test_a_store_that_cannot_be_written_runs_nothing(team: toolcards.Team) -> None:
    exec_command = keyed_with(team, FailingStore(good=0))
    with pytest.raises(StoreError) as refused:
        exec_command.call_sync({"cmd": "echo run >> count.txt"}, idempotency_key="k")
    assert refused.value.transient
    assert lines("count.txt") == []


def test_expired_records_are_purged_by_a_start_now_and_then() -> None:
    store = MemoryStore()
    old = {"d": "x", "a": "exit code: 0", "v": 1, "t": time.time() - CALL_MAX_AGE_S - 60}
    store.put(NAMESPACE, CALLS, {"@Ann|exec_command|old": old})
    while store.version(NAMESPACE) % PURGE_EVERY:  # a start at this version loads and purges
        store.put(NAMESPACE, "filler", {"row": store.version(NAMESPACE)})
    claim = CommandCalls(store, TEAM).start(
        CallKey(key="@Ann|exec_command|new", digest="d"), deadline_s=1.0, background=False, check=""
    )
    assert isinstance(claim, Claim)
    claim.record("exit code: 0", None)
    assert set(store.load(NAMESPACE).rows[CALLS]) == {"@Ann|exec_command|new"}
