"""The team config file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.cards import EchoTool
from toolcards import WiringError
from toolcards.server._config import DEFAULT_TEAM_CARDS, ServeConfig, default_config, load_config


def test_a_yaml_config_describes_a_team(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(
        "team_id: acme\n"
        "imports: [tests.server.cards]\n"
        "cards:\n"
        "  - kind: test_echo\n"
        "    motd_text: Welcome.\n"
        "    crash: false\n"
        "facade: true\n"
        "hot_tools: [echo]\n"
    )
    config = load_config(path)
    assert (config.team_id, config.facade, config.hot_tools) == ("acme", True, ["echo"])
    cards = config.build_cards()
    assert isinstance(cards[0], EchoTool) and cards[0].motd_text == "Welcome." and cards[0].crash is False
    assert config.build_cards()[0] is not cards[0]


def test_a_bare_list_is_a_team_of_those_cards(tmp_path: Path) -> None:
    path = tmp_path / "cards.json"
    path.write_text('[{"kind": "test_echo"}]')
    assert load_config(path).cards == [{"kind": "test_echo"}]
    assert load_config(path).team_id == "default"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("team_id: x\ncardz: []\n", "cardz: Extra inputs are not permitted"),
        ("cards:\n  - motd_text: x\n", "need a 'kind' key"),
        ("cards: [\n", "not valid YAML"),
        ("42\n", "must be a mapping"),
    ],
)
def test_invalid_configs_name_the_file_and_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(WiringError, match=message) as info:
        load_config(path)
    assert "bad.yaml" in str(info.value)


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WiringError, match=r"Cannot read config .*nope\.yaml"):
        load_config(tmp_path / "nope.yaml")


def test_unknown_kinds_and_imports_fail_when_the_cards_are_built() -> None:
    with pytest.raises(WiringError, match="Unknown card kind 'teleporter'"):
        ServeConfig(cards=[{"kind": "teleporter"}]).build_cards()
    with pytest.raises(WiringError, match=r"Cannot import 'no\.such\.module'"):
        ServeConfig(imports=["no.such.module"]).build_cards()


def test_the_default_team_has_the_four_standard_cards() -> None:
    config = default_config()
    assert [card["kind"] for card in config.cards] == list(DEFAULT_TEAM_CARDS)
    assert DEFAULT_TEAM_CARDS == ("workspace", "planning", "knowledge_graph", "exec", "messaging")


def test_options_override_validated() -> None:
    config = ServeConfig().with_options(facade=True, hot_tools=["a"])
    assert config.facade and config.hot_tools == ["a"]
    with pytest.raises(WiringError, match="team_id: String should have at least 1 character"):
        ServeConfig().with_options(team_id="")


def test_the_compose_sketch_serves_a_team_config_that_loads() -> None:
    """docker/compose.yaml cannot run here (no Docker engine); its parts can be checked."""
    from pathlib import Path

    import yaml

    from toolcards.server._config import load_config

    docker = Path(__file__).resolve().parents[2] / "docker"
    compose = yaml.safe_load((docker / "compose.yaml").read_text())
    replicas = [name for name, service in compose["services"].items() if "serve" in service.get("command", [])]
    assert len(replicas) == 2
    for name in replicas:
        environment = compose["services"][name]["environment"]
        assert environment["TOOLCARDS_STORE"].startswith("postgresql://")
    config = load_config(docker / "team.yaml")
    assert {card["kind"] for card in config.cards} == {"planning", "knowledge_graph", "workspace"}


@pytest.mark.parametrize("text", ["", "\n", "# the team\n", "---\n"])
def test_an_empty_config_file_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(text)

    with pytest.raises(WiringError) as info:
        load_config(path)

    message = str(info.value)
    assert f"Config {path} is empty" in message
    assert "leave --config out" in message
