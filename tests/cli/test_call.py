"""``toolcards call``: one command against a team's persisted state, with exit codes for scripts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toolcards.cli import main
from toolcards.cli._call import command_text


def test_commands_persist_between_calls_and_stamp_the_agent(
    team_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["call", "--config", str(team_yaml), "--agent", "Ann", "/add_note", "buy milk"]) == 0
    assert capsys.readouterr().out == "Added note 1.\n"
    assert main(["call", "--config", str(team_yaml), "list_notes"]) == 0
    assert capsys.readouterr().out.strip() == '[{"text": "buy milk", "author": "@Ann"}]'


def test_without_a_command_it_lists_the_commands(team_yaml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "--config", str(team_yaml)]) == 0
    out = capsys.readouterr().out
    assert "/echo <text> [times]\n    Repeat some text." in out
    # A script may run the tools a model calls too, not only the COMMAND channel.
    assert "/wipe" in out


def test_a_failed_command_exits_1_with_its_error_on_stderr(team_yaml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "--config", str(team_yaml), "/fussy Voldemort"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == "Error: That name must not be spoken. Greet someone else."


def test_a_tool_needing_approval_runs_only_with_approve(team_yaml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.server.cards import WIPES

    WIPES.clear()
    assert main(["call", "--config", str(team_yaml), "/wipe"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "Error: /wipe requires a human's approval, so it did not run. "
        "Run the command again with --approve to approve it.\n"
    )
    assert WIPES == []
    assert main(["call", "--config", str(team_yaml), "--approve", "/wipe"]) == 0
    assert capsys.readouterr().out == "wiped\n"
    assert WIPES == ["wiped"]


def test_an_oversized_command_is_refused_unread(team_yaml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolcards.core._commands import MAX_COMMAND_CHARS

    # A command the team cannot take is a usage error (exit code 2), like an unknown one.
    assert main(["call", "--config", str(team_yaml), "/add_note", "x" * MAX_COMMAND_CHARS]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: The command '/add_note ") and "over the limit of 262,144" in err
    assert err.count("\n") == 1 and len(err) < 400


def test_an_unknown_command_exits_2(team_yaml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "--config", str(team_yaml), "/teleport"]) == 2
    assert "Unknown command /teleport. Known commands: /add_note" in capsys.readouterr().err


def test_setup_errors_are_one_line_unless_debugging(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("cards: [\n")
    assert main(["call", "--config", str(broken), "/x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"toolcards: error: Config {broken} is not valid YAML") and err.count("\n") == 1
    with pytest.raises(Exception, match="is not valid YAML"):
        main(["--debug", "call", "--config", str(broken), "/x"])
    # A config file that does not exist is a mistake on the command line itself.
    assert main(["call", "--config", str(tmp_path / "missing.yaml"), "/x"]) == 2
    assert "missing.yaml: no such file" in capsys.readouterr().err


def test_arguments_a_tool_refuses_are_a_usage_error_and_nothing_runs(
    team_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["call", "--config", str(team_yaml), "/echo", "hi", "times=many"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("Error: Invalid arguments for echo: times")


def test_no_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: toolcards" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("words", "text"),
    [
        (["/get_planning"], "/get_planning"),
        (["get_planning"], "/get_planning"),
        (['/note "a b" c'], '/note "a b" c'),
        (["/note", "a b", "c"], "/note 'a b' c"),
    ],
)
def test_command_text(words: list[str], text: str) -> None:
    assert command_text(words) == text


def test_a_script_writes_the_board_a_server_is_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], team_store: Path
) -> None:
    """`call` beside a live team: the server's next read sees the script's writes and vice versa."""
    from toolcards.actors import ActorSystem
    from toolcards.core._factory import ToolFactory
    from toolcards.planning import PlanningTool
    from toolcards.store import store_journals
    from toolcards.testing import FakeObserver

    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "team.db"))
    with ActorSystem(journal=store_journals()) as system:
        # The "server": a team whose board actor is already running with its cache.
        server_agent = FakeObserver("Server", "default", system=system)
        tools = {tool.name: tool for tool in ToolFactory([PlanningTool()], observer=server_agent).tools()}
        assert tools["update_planning"].call_sync({"create_tasks": [{"description": "from the server"}]}) == (
            "Created task 1."
        )

        # Another process writes through the CLI...
        create = '[{"description": "from a script", "dependencies": [1]}]'
        script = [sys.executable, "-m", "toolcards.cli", "call", "/update_planning", f"create_tasks={create}"]
        done = subprocess.run(script, capture_output=True, text=True, timeout=120, check=False)
        assert (done.returncode, done.stdout.strip()) == (0, "Created task 2."), done.stderr

        # ...and the server's next call sees it, and allocates after it.
        assert "from a script" in tools["search_planning"].call_sync({"query": "script"})
        assert tools["update_planning"].call_sync({"create_tasks": [{"description": "again"}]}) == "Created task 3."

    assert main(["call", "/search_planning"]) == 0
    listed = capsys.readouterr().out
    assert all(task in listed for task in ("from the server", "from a script", "again"))


def test_store_option_selects_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolcards.store import SQLiteStore

    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "ignored.db"))
    chosen = tmp_path / "chosen.db"
    SQLiteStore(chosen).close()
    create = '[{"description": "kept in the chosen store"}]'
    assert main(["call", "--store", str(chosen), "/update_planning", f"create_tasks={create}"]) == 0
    assert SQLiteStore(chosen).version("default/#PlanningTool") == 1
    assert not (tmp_path / "ignored.db").exists()


def test_an_unusable_store_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "x.db"))
    assert main(["call", "--store", "mysql://db/team", "/get_planning"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toolcards: error: Unknown store location scheme 'mysql'") and err.count("\n") == 1


def test_a_name_a_live_member_of_another_process_holds_gets_a_suffix(
    team_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import toolcards

    # A front-door member on the same store, in another actor system: to the roster, another process.
    with toolcards.Team("cli-team") as team:
        team.member("Ann")
        assert main(["call", "--config", str(team_yaml), "--agent", "Ann", "/whoami"]) == 0
        captured = capsys.readouterr()
        assert captured.out == "@Ann-2\n"
        assert captured.err.startswith("@Ann is already a member of team cli-team, in process ")
        assert captured.err.endswith("Acting as @Ann-2.\n")
        assert [member.handle for member in team.handle.present_members()] == ["@Ann"]  # @Ann-2 left
