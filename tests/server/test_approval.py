"""Approval by asking: a tool that ``requires_approval`` runs once its user accepts it through
the client's elicitation, on both protocol eras, in-process and over a real ``toolcards serve``."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from tests.server import cards
from tests.server.conftest import make_config
from tests.server.test_stdio import REPO, stdio_params
from toolcards.actors._system import ActorSystem
from toolcards.server import TeamServer
from toolcards.server._approval import PendingApprovals

INFO = types.Implementation(name="Approver", version="1")


def answering(action: str, seen: list[str] | None = None, delay_s: float = 0.0) -> Any:
    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        if seen is not None:
            seen.append(params.message)
        await asyncio.sleep(delay_s)
        return types.ElicitResult(action=action)  # type: ignore[arg-type]

    return callback


def text_of(result: types.CallToolResult) -> str:
    part = result.content[0]
    assert isinstance(part, types.TextContent)
    return part.text


def wipe(server: TeamServer, mode: str, **options: Any) -> types.CallToolResult:
    async def main() -> types.CallToolResult:
        async with Client(server.server, mode=mode, client_info=INFO, **options) as client:  # type: ignore[arg-type]
            return await client.call_tool("wipe", {})

    return asyncio.run(main())


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_accepted_call_runs_once_and_the_user_saw_the_call(team_server: TeamServer, mode: str) -> None:
    seen: list[str] = []
    before = len(cards.WIPES)
    result = wipe(team_server, mode, elicitation_callback=answering("accept", seen))
    assert not result.is_error and text_of(result) == "wiped"
    assert len(cards.WIPES) == before + 1
    assert len(seen) == 1 and "@Approver wants to run wipe()" in seen[0] and "Accept to run" in seen[0]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize(
    ("action", "words"), [("decline", "The user declined"), ("cancel", "dismissed the request to approve wipe")]
)
def test_a_declined_or_dismissed_call_is_refused_in_words(
    team_server: TeamServer, mode: str, action: str, words: str
) -> None:
    before = len(cards.WIPES)
    result = wipe(team_server, mode, elicitation_callback=answering(action))
    assert result.is_error and words in text_of(result) and "did not run" in text_of(result)
    assert len(cards.WIPES) == before


def test_no_answer_in_time_refuses_the_call(system: ActorSystem) -> None:
    server = TeamServer(make_config(approval_timeout_s=0.5), system=system)
    try:
        before = len(cards.WIPES)
        result = wipe(server, "legacy", elicitation_callback=answering("accept", delay_s=3))
        assert result.is_error and "Nobody approved this call of wipe in time" in text_of(result)
        assert len(cards.WIPES) == before
    finally:
        server.close()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_without_elicitation_the_call_is_refused_as_before(team_server: TeamServer, mode: str) -> None:
    result = wipe(team_server, mode)
    assert (
        result.is_error
        and "this client cannot be asked for it (it did not declare elicitation in form mode)" in text_of(result)
    )


def test_approve_all_runs_without_asking(system: ActorSystem) -> None:
    server = TeamServer(make_config(approve_all=True), system=system)
    try:
        seen: list[str] = []
        result = wipe(server, "legacy", elicitation_callback=answering("decline", seen))
        assert not result.is_error and seen == []
    finally:
        server.close()


def test_a_stateless_answer_counts_only_for_the_call_it_was_asked_about(team_server: TeamServer) -> None:
    async def main() -> tuple[Any, Any]:
        # The callback declares the capability; the rounds are driven by hand below.
        async with Client(team_server.server, client_info=INFO, elicitation_callback=answering("decline")) as client:
            session = client.session
            asked = await session.call_tool("wipe", {}, allow_input_required=True)  # type: ignore[call-arg]
            assert isinstance(asked, types.InputRequiredResult) and asked.request_state
            (question,) = (asked.input_requests or {}).values()
            assert question.method == "elicitation/create"
            accept = {"approval": types.ElicitResult(action="accept")}
            forged = await session.call_tool(  # type: ignore[call-arg]
                "wipe", {}, input_responses=accept, request_state="made-up", allow_input_required=True
            )
            answered = await session.call_tool(  # type: ignore[call-arg]
                "wipe", {}, input_responses=accept, request_state=asked.request_state, allow_input_required=True
            )
            return forged, answered

    before = len(cards.WIPES)
    forged, answered = asyncio.run(main())
    assert forged.is_error and "was not asked for this call" in text_of(forged)
    assert not answered.is_error and len(cards.WIPES) == before + 1


def test_pending_approvals_are_used_once_by_their_agent_and_expire() -> None:
    from toolcards.core._approval import ApprovalRequest
    from toolcards.core._channels import Channels
    from toolcards.core._tool import Tool
    from toolcards.errors import ApprovalRequired
    from toolcards.server._approval import ApprovalNeeded

    def wipe_all() -> str:
        """Wipe."""
        return "wiped"

    tool = Tool.from_function(wipe_all)
    request = ApprovalRequest(tool=tool, args={}, channel=Channels.TOOL_CALL, agent="@A", call_id="1")
    now = [0.0]
    pending = PendingApprovals(clock=lambda: now[0])
    states = []
    for _ in range(3):
        with pytest.raises(ApprovalNeeded) as asked:
            pending.asker("@A")(request)
        states.append(asked.value.request_state)
    assert pending.answered("@A", states[0], {"action": "accept"})(request) is True
    with pytest.raises(ApprovalRequired, match="was not asked for this call"):
        pending.answered("@A", states[0], {"action": "accept"})(request)  # used once
    with pytest.raises(ApprovalRequired, match="was not asked for this call"):
        pending.answered("@B", states[1], {"action": "accept"})(request)  # another agent's
    now[0] = 10_000.0
    with pytest.raises(ApprovalRequired, match="expired"):
        pending.answered("@A", states[2], {"action": "accept"})(request)


CONFIG = """\
team_id: approval-team
cards:
  - kind: workspace
    workspace_write: {requires_approval: true}
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_over_stdio_the_user_decides_whether_a_write_happens(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLCARDS_WORKSPACES_ROOT", str(tmp_path / "workspaces"))
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "state.db"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO / "src"), str(REPO)]))  # the code under test first
    config = tmp_path / "team.yaml"
    config.write_text(CONFIG)
    answers = iter(["decline", "accept"])

    async def user(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert "workspace_write(path='note.txt'" in params.message
        return types.ElicitResult(action=next(answers))  # type: ignore[arg-type]

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        client = Client(stdio_client(stdio_params(config)), mode=mode, client_info=INFO, elicitation_callback=user)  # type: ignore[arg-type]
        async with client:
            args = {"path": "note.txt", "content": "approved"}
            return await client.call_tool("workspace_write", args), await client.call_tool("workspace_write", args)

    declined, accepted = asyncio.run(main())
    assert declined.is_error and "declined" in text_of(declined)
    assert not accepted.is_error
    assert (tmp_path / "workspaces" / "approval-team" / "note.txt").read_text() == "approved"
