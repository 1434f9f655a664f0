"""Agent sessions: names, roster membership, leases and idle expiry."""

from __future__ import annotations

import threading

import pytest

from tests.server.cards import EchoTool, NotesTool
from toolcards import ActorToolObserver, WiringError
from toolcards.actors._system import ActorSystem
from toolcards.server._session import AgentSessions, SessionAgent, agent_name


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("Alice", "Alice"),
        ("Visual Studio Code", "Visual-Studio-Code"),
        ("@#claude-ai", "claude-ai"),
        ("a/b\\c", "a-b-c"),
        ("", "mcp-client"),
        (None, "mcp-client"),
        ("!!!", "mcp-client"),
        ("x" * 80, "x" * 40),
    ],
)
def test_agent_names_are_roster_safe(raw: str | None, name: str) -> None:
    assert agent_name(raw) == name


def test_a_session_agent_is_a_team_observer(system: ActorSystem) -> None:
    agent = SessionAgent("Alice", system.team("t"), user_id="u1")
    assert isinstance(agent, ActorToolObserver)
    assert (agent.address.handle, agent.team_id, agent.user_id) == ("@Alice", "t", "u1")


def test_sessions_bind_fresh_cards_per_agent(system: ActorSystem) -> None:
    sessions = AgentSessions(system.team("t"), [EchoTool(motd_text="Hi."), NotesTool()])
    alice, bob = sessions.open("Alice"), sessions.open("Bob")
    assert sessions.open("Alice") is alice
    assert alice.factory.cards[0] is not bob.factory.cards[0]
    assert alice.tools["whoami"].call_sync() == "@Alice"
    assert bob.tools["whoami"].call_sync() == "@Bob"
    assert set(alice.prompts) == {"motd", "notes_board"}
    assert {m.name for m in system.team("t").members()} == {"Alice", "Bob"}


def test_the_last_lease_closes_the_session(system: ActorSystem) -> None:
    team = system.team("t")
    sessions = AgentSessions(team, [EchoTool()])
    first = sessions.lease("Alice")
    second = sessions.lease("Alice")
    assert first is second
    sessions.release(first)
    assert not first.closed and [m.name for m in team.members()] == ["Alice"]
    sessions.release(second)
    assert first.closed and team.members() == [] and team.present_members() == []
    assert sessions.get("Alice") is None
    assert [(e.kind, e.member.name, getattr(e, "reason", None)) for _, e in team.events()] == [
        ("member_joined", "Alice", None),
        ("member_left", "Alice", "session ended"),
    ]


def test_idle_sessions_without_leases_are_swept(system: ActorSystem) -> None:
    clock = Clock()
    team = system.team("t")
    sessions = AgentSessions(team, [EchoTool()], idle_timeout_s=60, clock=clock)
    sessions.open("Idle")
    sessions.lease("Connected")
    clock.now += 30
    assert sessions.sweep() == []
    clock.now += 31
    assert sessions.sweep() == ["Idle"]
    assert [m.name for m in team.members()] == ["Connected"]
    sessions.close_all()
    assert team.members() == []


def test_a_session_opening_while_the_server_stops_leaves_at_once(system: ActorSystem) -> None:
    # A cancelled request's thread may still be opening its session when the server stops.
    team = system.team("t")
    binding, release = threading.Event(), threading.Event()

    def slow_cards() -> list[EchoTool]:
        binding.set()
        release.wait()
        return [EchoTool()]

    sessions = AgentSessions(team, slow_cards)
    outcome: list[str] = []

    def open_late() -> None:
        try:
            sessions.open("Late")
            outcome.append("opened")
        except RuntimeError as exc:
            outcome.append(str(exc))

    opener = threading.Thread(target=open_late)
    opener.start()
    binding.wait()
    sessions.close_all()
    release.set()
    opener.join()
    assert outcome == ["team t is stopping: Late cannot join"]
    assert sessions.sessions() == [] and team.members() == []
    with pytest.raises(RuntimeError, match="stopping"):
        sessions.open("Later")


def test_the_catalog_checks_the_wiring_once_without_joining_the_roster(system: ActorSystem) -> None:
    team = system.team("t")
    sessions = AgentSessions(team, [EchoTool()])
    assert sessions.catalog() is sessions.catalog()
    assert team.members() == []

    def broken() -> list[EchoTool]:
        raise WiringError("bad card")

    with pytest.raises(WiringError, match="bad card"):
        AgentSessions(team, broken).catalog()


def test_a_failing_bind_leaves_no_roster_entry(system: ActorSystem) -> None:
    team = system.team("t")
    calls = iter([[EchoTool()]])

    def cards() -> list[EchoTool]:
        return next(calls, None) or _raise()

    def _raise() -> list[EchoTool]:
        raise WiringError("cannot bind")

    sessions = AgentSessions(team, cards)
    sessions.open("Alice")
    with pytest.raises(WiringError):
        sessions.open("Bob")
    assert [m.name for m in team.members()] == ["Alice"]
