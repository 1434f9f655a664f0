"""A team of agents: a lead hires two builders, delegates by message, hears back, fires one.

Run it with ``python -m toolcards.examples.team``. Scripted pydantic-ai models stand in for LLMs
(no network, no API key); give a profile ``model="openai:gpt-4o"`` for a real one. The
team's event log is printed as a transcript at the end.
"""

from __future__ import annotations

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolcards import dump_cards
from toolcards.actors import ActorSystem
from toolcards.team import MemberFired, MemberHired, RoleProfile, RunFinished, TeamMessage, TeamRuntime, TeamTool


def current_turn(messages: list[ModelMessage]) -> tuple[str, list[ToolReturnPart]]:
    """The message that started this run, and the tool results the run has seen so far.

    A teammate's message that reaches a member mid-run is added to the run as a later user
    prompt (steering); the run's first request is the one carrying the run's id.
    """
    prompted = [
        i
        for i, m in enumerate(messages)
        if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
    ]
    run_ids = [m.run_id for m in messages if m.run_id]
    current = run_ids[-1] if run_ids else None
    start = next((i for i in prompted if messages[i].run_id == current), prompted[-1])
    prompt = next(str(p.content) for p in messages[start].parts if isinstance(p, UserPromptPart))
    returns = [p for m in messages[start + 1 :] for p in m.parts if isinstance(p, ToolReturnPart)]
    return prompt, returns


def lead(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Hires two builders for a request from the user, briefs them, acknowledges their reports."""
    prompt, returns = current_turn(messages)
    sender, _, text = prompt.partition(":\n")
    if sender != "Message from user":
        return ModelResponse(parts=[TextPart(f"Noted: {text}")])
    if len(returns) < 2:
        return ModelResponse(parts=[ToolCallPart("hire_team_member", {"role": "builder"})])
    if len(returns) == 2:
        return ModelResponse(
            parts=[
                ToolCallPart("send_message", {"to": "Builder-1", "text": f"Write the code for: {text}"}),
                ToolCallPart("send_message", {"to": "Builder-2", "text": f"Write the tests for: {text}"}),
            ]
        )
    return ModelResponse(parts=[TextPart("Delegated to @Builder-1 and @Builder-2.")])


def builder(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Does the work it is given and reports to whoever asked."""
    prompt, returns = current_turn(messages)
    sender, _, text = prompt.partition(":\n")
    if not returns:
        report = f"Done: {text[0].lower()}{text[1:]}"
        return ModelResponse(
            parts=[ToolCallPart("send_message", {"to": sender.removeprefix("Message from "), "text": report})]
        )
    return ModelResponse(parts=[TextPart("Reported.")])


def build_team(system: ActorSystem) -> TeamRuntime:
    """A runtime for team ``demo`` with a lead (who may hire) and a builder role."""
    team = TeamRuntime(
        system.team("demo"),
        models={
            "scripted-lead": lambda profile: FunctionModel(lead),
            "scripted-builder": lambda profile: FunctionModel(builder),
        },
    )
    team.register_profile(
        RoleProfile(
            role="lead",
            description="Plans the work and delegates it.",
            model="scripted-lead",
            cards=dump_cards([TeamTool()]),
            hireable=False,
        )
    )
    team.register_profile(RoleProfile(role="builder", description="Writes code and tests.", model="scripted-builder"))
    return team


def main() -> None:
    with ActorSystem() as system:
        team = build_team(system)
        team.hire("lead", "Lead")
        print(team.ask("Lead", "A CSV parser"))
        team.wait_idle()
        print(team.commands("Lead").dispatch("/team_roster"))
        print(team.commands("Lead").dispatch("/fire_team_member Builder-2"))
        print("\nTranscript:")
        for seq, event in team.team.events():
            if isinstance(event, TeamMessage):
                print(f"{seq:3} {event.sender} -> {event.recipient}: {event.text}")
            elif isinstance(event, RunFinished):
                print(f"{seq:3} {event.member} answered: {event.output or event.error}")
            elif isinstance(event, MemberHired | MemberFired):
                verb = "hired" if isinstance(event, MemberHired) else "fired"
                by = event.hired_by if isinstance(event, MemberHired) else event.fired_by
                print(f"{seq:3} {event.member.handle} {verb} by {by or 'the application'}")


if __name__ == "__main__":
    main()
