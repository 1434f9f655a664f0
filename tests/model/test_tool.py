"""ModelTool: a roster, a member's choice kept in the store, and the next request on the new model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

from tests.model import scripted
from toolcards import RetriableError, ToolFactory, WiringError, dump_cards, load_cards
from toolcards.actors import ActorSystem
from toolcards.model import ModelOption, ModelTool, SwitchModelParam
from toolcards.pydantic_ai import ModelSwitch, TeamContext
from toolcards.team import RoleProfile, TeamRuntime
from toolcards.testing import FakeObserver

REPO = Path(__file__).resolve().parents[2]
ROSTER = {
    "fast": {"factory": "tests.model.scripted:fast", "description": "Quick and cheap."},
    "deep": {"factory": "tests.model.scripted:deep", "description": "Careful reasoning."},
}


@pytest.fixture(autouse=True)
def fresh_calls() -> Iterator[None]:
    scripted.CALLS.clear()
    yield
    scripted.CALLS.clear()


def tools(card: ModelTool, observer: FakeObserver) -> dict[str, Any]:
    return {tool.name: tool for tool in ToolFactory([card], observer=observer).tools()}


# -- the roster ---------------------------------------------------------------------------------


def test_a_roster_round_trips_and_strings_stand_for_model_strings() -> None:
    card = ModelTool(roster={"quick": "openai:gpt-5-mini", **ROSTER}, default="quick")
    assert card.roster["quick"] == ModelOption(model="openai:gpt-5-mini")
    data = json.loads(json.dumps(dump_cards([card])))
    assert data[0]["kind"] == "model"
    assert load_cards(data) == [card]


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"roster": ROSTER, "default": "medium"}, "default 'medium' is not in the roster"),
        ({"roster": {"bad name!": "test"}}, "model name 'bad name!' is not valid"),
        ({"roster": {"x": {"model": "test", "factory": "a:b"}}}, "give either model"),
        ({"roster": {"x": {"description": "nothing"}}}, "give either model"),
        ({"roster": {"x": {"factory": "no-colon"}}}, "must be 'package.module:function'"),
        ({"roster": {"x": {"model": "test", "description": "two\nlines"}}}, "one line"),
    ],
)
def test_a_bad_roster_is_refused(fields: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        ModelTool(**fields)


def test_a_factory_that_cannot_be_imported_fails_at_bind(alice: FakeObserver) -> None:
    roster = {"a": {"factory": "tests.model.nowhere:fast"}, "b": {"factory": "tests.model.scripted:not_callable"}}
    with pytest.raises(WiringError) as caught:
        ToolFactory([ModelTool(roster=roster)], observer=alice)
    assert "roster['a'].factory 'tests.model.nowhere:fast'" in str(caught.value)
    assert "roster['b'].factory 'tests.model.scripted:not_callable': not_callable is not callable" in str(caught.value)


def test_an_empty_roster_fails_at_bind(alice: FakeObserver) -> None:
    with pytest.raises(WiringError, match="ModelTool has no models to switch between: give a roster"):
        ToolFactory([ModelTool()], observer=alice)


def test_it_needs_a_team_member() -> None:
    with pytest.raises(WiringError, match="needs an observer implementing ActorToolObserver"):
        ToolFactory([ModelTool(roster=ROSTER)])


# -- the tools ------------------------------------------------------------------------------------


def test_the_context_lists_and_switches(alice: FakeObserver) -> None:
    found = tools(ModelTool(roster=ROSTER, default="fast"), alice)
    assert found["current_model"].call_sync({}) == "Model: fast — Quick and cheap. switch_model picks another: deep."
    assert found["list_models"].call_sync({}) == "- fast — Quick and cheap. (in use)\n- deep — Careful reasoning."
    assert found["switch_model"].call_sync({"name": "deep"}) == "Switched to deep: your next model request runs on it."
    assert found["current_model"].call_sync({}).startswith("Model: deep — Careful reasoning.")
    assert found["switch_model"].call_sync({"name": "deep"}) == "Already on deep."


def test_without_a_choice_or_default_the_agent_keeps_its_model(alice: FakeObserver) -> None:
    card = ModelTool(roster=ROSTER)
    found = tools(card, alice)
    assert found["current_model"].call_sync({}) == "Model: the agent's own. switch_model picks another: fast, deep."
    assert card.selected_model() is None


def test_an_unknown_name_changes_nothing(alice: FakeObserver) -> None:
    card = ModelTool(roster=ROSTER, default="fast")
    found = tools(card, alice)
    with pytest.raises(RetriableError, match=r"No model is called 'dep'. Did you mean deep\? Models: fast, deep."):
        found["switch_model"].call_sync({"name": "dep"})
    assert card.active_name() == "fast"


def test_each_member_has_its_own_choice(alice: FakeObserver, bob: FakeObserver) -> None:
    alice_card, bob_card = ModelTool(roster=ROSTER, default="fast"), ModelTool(roster=ROSTER, default="fast")
    tools(alice_card, alice)["switch_model"].call_sync({"name": "deep"})
    tools(bob_card, bob)
    assert (alice_card.active_name(), bob_card.active_name()) == ("deep", "fast")


def test_read_only_drops_the_switch(alice: FakeObserver) -> None:
    found = tools(ModelTool(roster=ROSTER, default="fast", read_only=True), alice)
    assert "switch_model" not in found
    assert found["current_model"].call_sync({}) == "Model: fast — Quick and cheap."


# -- the next request --------------------------------------------------------------------------


def test_a_switch_takes_effect_at_the_next_request_of_the_same_run(alice: FakeObserver) -> None:
    factory = ToolFactory([ModelTool(roster=ROSTER, default="fast")], observer=alice)
    agent = Agent(scripted.fast(), toolsets=[factory.toolset()], capabilities=[ModelSwitch(factory)])
    assert agent.run_sync("go").output == "deep answered"
    assert scripted.CALLS == ["fast", "deep"]
    assert agent.run_sync("again").output == "deep answered"  # and stays for the next runs


def test_without_a_choice_the_agents_own_model_runs(alice: FakeObserver) -> None:
    factory = ToolFactory([ModelTool(roster={"deep": ROSTER["deep"]})], observer=alice)

    def own(messages: list[Any], info: Any) -> ModelResponse:
        scripted.CALLS.append("own")
        return ModelResponse(parts=[TextPart("own answered")])

    agent = Agent(FunctionModel(own), toolsets=[factory.toolset()], capabilities=[ModelSwitch(factory)])
    assert agent.run_sync("go").output == "own answered"


def test_team_context_switches_too(alice: FakeObserver) -> None:
    factory = ToolFactory([ModelTool(roster=ROSTER, default="fast")], observer=alice)
    agent = Agent(scripted.fast(), capabilities=[TeamContext(factory)])
    assert agent.run_sync("go").output == "deep answered"


def hire_analyst(runtime: TeamRuntime) -> None:
    """Hire @Ana, whose roster names the runtime's models ``quick`` (default) and ``slow``."""
    roster = {"fast": {"model": "quick"}, "deep": {"model": "slow"}}
    runtime.register_profile(
        RoleProfile(
            role="analyst",
            description="Analyses.",
            model="quick",
            cards=[{"kind": "model", "roster": roster, "default": "fast"}],
        )
    )
    runtime.hire("analyst", "Ana")


def test_a_runtime_member_switches_and_roster_names_may_be_registered_models(system: ActorSystem) -> None:
    runtime = TeamRuntime(
        system.team("models-team"), models={"quick": lambda profile: scripted.fast(), "slow": lambda p: scripted.deep()}
    )
    hire_analyst(runtime)
    assert runtime.ask("Ana", "look into it") == "deep answered"
    assert scripted.CALLS == ["fast", "deep"]


def test_two_cards_choosing_the_model_are_refused(alice: FakeObserver) -> None:
    class OtherChooser(ModelTool):
        kind = "test_other_chooser"

    factory = ToolFactory(
        [
            ModelTool(roster=ROSTER),
            OtherChooser(roster=ROSTER, current_model=False, list_models=False, switch_model=False),
        ],
        observer=alice,
    )
    with pytest.raises(WiringError, match="Two cards choose this agent's model"):
        factory.model_selector()


# -- a model that cannot be built ---------------------------------------------------------------


@pytest.fixture
def no_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


NO_KEY = (
    "Set the `OPENAI_API_KEY` environment variable or pass it via `OpenAIProvider(api_key=...)` "
    "to use the OpenAI provider"
)


class Own:
    """The agent's own model: it calls the tools it is given in turn, then answers; it records
    what it read before each request."""

    def __init__(self, *calls: tuple[str, dict[str, Any]]) -> None:
        self.calls = list(calls)
        self.instructions: list[str | None] = []

    def __call__(self, messages: list[Any], info: Any) -> ModelResponse:
        scripted.CALLS.append("own")
        self.instructions.append(info.instructions)
        step = sum(isinstance(message, ModelResponse) for message in messages)
        if step < len(self.calls):
            return ModelResponse(parts=[ToolCallPart(*self.calls[step])])
        return ModelResponse(parts=[TextPart("own answered")])


def returns(messages: list[Any]) -> list[str]:
    return [str(part.content) for m in messages for part in getattr(m, "parts", ()) if isinstance(part, ToolReturnPart)]


def test_a_provider_pydantic_ai_does_not_know_fails_at_bind(alice: FakeObserver, no_openai_key: None) -> None:
    roster = {"main": "test", "broken": "no-such-provider:model-x", "bare": "openai:", "gpt": "openai:gpt-5-mini"}
    with pytest.raises(WiringError) as caught:
        ToolFactory([ModelTool(roster=roster)], observer=alice)
    message = str(caught.value)
    assert (
        "roster['broken'].model 'no-such-provider:model-x': pydantic-ai has no provider 'no-such-provider'" in message
    )
    assert "roster['bare'].model 'openai:': it names no model after the provider 'openai'" in message
    assert "Give 'provider:model' with a provider pydantic-ai has" in message
    assert "'main'" not in message and "'gpt'" not in message  # no key is needed to bind: it may be set later
    ToolFactory([ModelTool(roster={"main": "test", "gpt": "openai:gpt-5-mini"})], observer=alice)


def test_a_switch_to_a_model_that_cannot_be_built_now_is_refused(
    alice: FakeObserver, no_openai_key: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    card = ModelTool(roster={"deep": ROSTER["deep"], "gpt": "openai:gpt-5-mini"})
    factory = ToolFactory([card], observer=alice)
    own = Own(("switch_model", {"name": "gpt"}))
    result = Agent(FunctionModel(own), toolsets=[factory.toolset()], capabilities=[ModelSwitch(factory)]).run_sync("go")
    assert result.output == "own answered" and scripted.CALLS == ["own", "own"]
    assert returns(result.all_messages()) == [
        f"Model gpt cannot be used now: {NO_KEY}. You stay on the agent's own model; switch_model can pick deep."
    ]
    assert card.active_name() is None  # nothing was recorded
    monkeypatch.setenv("OPENAI_API_KEY", "sk-set-later")  # set after the bind: the switch builds it now
    assert tools(card, alice)["switch_model"].call_sync({"name": "gpt"}).startswith("Switched to gpt")


@pytest.mark.parametrize("default", [None, "deep"])
def test_a_stored_choice_that_cannot_be_built_falls_back_with_a_note(
    system: ActorSystem, no_openai_key: None, default: str | None
) -> None:
    roster = {"deep": ROSTER["deep"], "gpt": "openai:gpt-5-mini", "other": {"factory": "tests.model.scripted:broken"}}
    card = ModelTool(roster=roster, default=default)
    factory = ToolFactory([card], observer=FakeObserver("Alice", "team-1", system=system))
    # The choice was made where a key was set (another process, or before it was removed).
    card.ask(card.choices.switch("Alice", "gpt"), actor="#ModelTool")
    instead = "deep — Careful reasoning" if default else "the agent's own"
    others = "other" if default else "deep, other"
    note = f"Model: {instead}. Your choice, gpt, cannot be used now: {NO_KEY}. switch_model picks another: {others}."
    for _ in range(2):  # every run, and after a restart (a new card reading the same store)
        own = Own()
        agent = Agent(FunctionModel(own), toolsets=[factory.toolset()], capabilities=[ModelSwitch(factory)])
        assert agent.run_sync("go").output == ("deep answered" if default else "own answered")
        assert factory.get_system_prompts()[0]() == note
        if not default:
            assert own.instructions == [note]
        card = ModelTool(roster=roster, default=default)
        factory = ToolFactory([card], observer=FakeObserver("Alice", "team-1", system=system))
    # The member can still switch, here to an entry whose factory fails: refused, with why.
    found = {tool.name: tool for tool in factory.tools()}
    with pytest.raises(
        RetriableError,
        match=r"Model other cannot be used now: its factory tests\.model\.scripted:broken failed: no GPU on this",
    ):
        found["switch_model"].call_sync({"name": "other"})
    assert found["switch_model"].call_sync({"name": "deep"}).startswith("Switched to deep")


def test_the_member_switches_away_from_a_choice_that_cannot_be_built(alice: FakeObserver, no_openai_key: None) -> None:
    card = ModelTool(roster={"deep": ROSTER["deep"], "gpt": "openai:gpt-5-mini"})
    factory = ToolFactory([card], observer=alice)
    card.ask(card.choices.switch("Alice", "gpt"), actor="#ModelTool")
    own = Own(("switch_model", {"name": "deep"}))
    agent = Agent(FunctionModel(own), toolsets=[factory.toolset()], capabilities=[ModelSwitch(factory)])
    assert agent.run_sync("go").output == "deep answered"
    assert scripted.CALLS == ["own", "deep"]
    assert "Your choice, gpt, cannot be used now" in (own.instructions[0] or "")
    assert card.active_name() == "deep"
    assert factory.get_system_prompts()[0]() == "Model: deep — Careful reasoning. switch_model picks another: gpt."


def test_a_name_without_a_provider_is_judged_by_the_agents_host(alice: FakeObserver) -> None:
    card = ModelTool(roster={"deep": ROSTER["deep"], "local": "my-local-model"})
    factory = ToolFactory([card], observer=alice)  # a team runtime may register "my-local-model"
    switch = {tool.name: tool for tool in factory.tools()}["switch_model"]
    # No host has asked yet: the choice is recorded, and the next request judges it.
    assert switch.call_sync({"name": "local"}).startswith("Switched to local")
    own = Own()
    Agent(FunctionModel(own), toolsets=[factory.toolset()], capabilities=[ModelSwitch(factory)]).run_sync("go")
    assert "Your choice, local, cannot be used now: Unknown model: my-local-model" in (own.instructions[0] or "")
    # Now the host has said it resolves no names: a switch to one is refused at once.
    switch.call_sync({"name": "deep"})
    with pytest.raises(RetriableError, match="Model local cannot be used now: Unknown model: my-local-model"):
        switch.call_sync({"name": "local"})


def test_a_runtime_refuses_a_roster_name_it_did_not_register(system: ActorSystem) -> None:
    runtime = TeamRuntime(system.team("models-team-2"), models={"quick": lambda profile: scripted.fast()})
    hire_analyst(runtime)
    assert runtime.ask("Ana", "look into it") == "fast answered"
    assert scripted.CALLS == ["fast", "fast"]
    [refusal] = returns(runtime.history("Ana"))
    assert refusal.startswith("Model deep cannot be used now: Unknown model: slow. You stay on fast")


# -- across processes --------------------------------------------------------------------------


def run_worker(store: Path, *args: str) -> str:
    env = {**os.environ, "TOOLCARDS_STORE": str(store)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.choice_worker", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.slow
def test_a_choice_made_in_another_process_is_kept_and_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "state.db"
    monkeypatch.setenv("TOOLCARDS_STORE", str(store))
    with ActorSystem() as system:
        alice = FakeObserver("Alice", "choices", system=system)
        card = ModelTool(roster=ROSTER, default="fast")
        factory = ToolFactory([card], observer=alice)
        assert card.active_name() == "fast"
        # Another process switches Alice while this one holds the team's actor and its cache.
        assert run_worker(store, "model", "Alice", "deep") == "Switched to deep: your next model request runs on it."
        assert card.active_name() == "deep"
        agent = Agent(scripted.fast(), toolsets=[factory.toolset()], capabilities=[ModelSwitch(factory)])
        assert agent.run_sync("go").output == "deep answered"
        assert scripted.CALLS == ["deep"]
    # A new process (the worker) finds the choice in the store: switching again changes nothing.
    assert run_worker(store, "model", "Alice", "deep") == "Already on deep."


def test_a_switch_by_command_uses_the_same_store_row(alice: FakeObserver) -> None:
    card = ModelTool(roster=ROSTER)
    commands = ToolFactory([card], observer=alice).get_commands()
    assert commands[SwitchModelParam](name="fast").startswith("Switched to fast")
    assert card.active_name() == "fast"
