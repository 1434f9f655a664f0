"""The command line's surface, as a user meets it: ``--version``, help without markup, options
that contradict each other refused, a generated token shown once, install hints that name real
extras. Every case runs the real CLI in a subprocess."""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.cli.conftest import REPO
from toolcards.cli import build_parser

pytestmark = pytest.mark.slow

# What a docstring's reST looks like when it leaks into a terminal.
MARKUP = re.compile(r"``|`[^`\s][^`]*`|\*\*|:(?:class|mod|func|meth|data|attr|exc|obj|ref):")


def toolcards(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolcards.cli", *args],
        cwd=cwd,
        env=env if env is not None else dict(os.environ),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def command_names() -> list[str]:
    parser = build_parser()
    (subparsers,) = [action for action in parser._actions if action.dest == "command"]
    return sorted(subparsers.choices)  # type: ignore[arg-type]


def test_version_prints_the_installed_version(tmp_path: Path) -> None:
    from importlib.metadata import version

    done = toolcards("--version", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"toolcards {version('toolcards')}\n", "")


def test_the_command_line_loads_pydantic_plugins_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolcards.cli import main

    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "recorded")  # restored (unset) after the test
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS")
    with pytest.raises(SystemExit):
        main(["--version"])
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "__all__"
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "")  # the user's choice: every plugin
    with pytest.raises(SystemExit):
        main(["--version"])
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == ""


@pytest.mark.parametrize("ends_start_up", [False, True])
def test_only_a_long_running_command_starts_without_the_collector(
    ends_start_up: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    from toolcards import cli

    seen: list[bool] = []

    def parser(command: str | None = None) -> argparse.ArgumentParser:
        made = argparse.ArgumentParser()
        made.add_argument("command")
        made.set_defaults(
            handler=lambda args: seen.append(gc.isenabled()) or 0, ends_start_up=ends_start_up, debug=False
        )
        return made

    monkeypatch.setattr(cli, "build_parser", parser)
    monkeypatch.setattr(cli, "configure_logging", lambda **options: None)
    assert gc.isenabled()
    assert cli.main(["go"]) == 0
    assert seen == [not ends_start_up]  # serve turns it back on itself, once it is ready
    assert gc.isenabled()


def _options(parser: argparse.ArgumentParser) -> list[tuple[tuple[str, ...], object, object]]:
    return [(tuple(action.option_strings), action.dest, action.default) for action in parser._actions]


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    (subparsers,) = [action for action in parser._actions if action.dest == "command"]
    return subparsers.choices[name]  # type: ignore[index,no-any-return]


@pytest.mark.parametrize("command", command_names())
def test_the_parser_made_for_one_command_reads_it_as_the_full_one_does(command: str) -> None:
    full, alone = build_parser(), build_parser(command)

    assert _options(alone) == _options(full)
    assert _options(_subcommand(alone, command)) == _options(_subcommand(full, command))
    assert _subcommand(alone, command).format_help() == _subcommand(full, command).format_help()


def test_a_command_imports_no_other_command(tmp_path: Path) -> None:
    from toolcards.cli import COMMANDS

    probe = (
        "import sys\n"
        "from toolcards.cli import main\n"
        "code = main(['cards'])\n"
        "print(' '.join(sorted(name for name in sys.modules if name.startswith('toolcards.cli._'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True
    )
    imported = set(done.stdout.splitlines()[-1].split())
    assert COMMANDS["cards"] in imported
    assert imported & set(COMMANDS.values()) == {COMMANDS["cards"]}


def test_the_help_before_a_command_lists_every_command(tmp_path: Path) -> None:
    done = toolcards("--help", "serve", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert all(name in done.stdout for name in command_names())


def test_a_mistyped_command_is_told_every_command(tmp_path: Path) -> None:
    done = toolcards("serv", cwd=tmp_path)

    assert done.returncode == 2
    assert "invalid choice: 'serv'" in done.stderr
    assert all(f"'{name}'" in done.stderr for name in command_names())


@pytest.mark.parametrize("command", ["", *command_names()])
def test_help_is_plain_text(command: str, tmp_path: Path) -> None:
    done = toolcards(*([command] if command else []), "--help", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: toolcards")
    leaked = [line for line in done.stdout.splitlines() if MARKUP.search(line)]
    assert leaked == [], f"markup in `toolcards {command} --help`"


def test_the_help_tells_where_the_team_lives(tmp_path: Path) -> None:
    text = " ".join(toolcards("--help", cwd=tmp_path).stdout.split())
    assert "--store/--root; TOOLCARDS_STORE/TOOLCARDS_WORKSPACES_ROOT; a toolcards.toml" in text
    assert "~/.local/share/toolcards/workspaces" in text and "toolcards info" in text
    assert {"init", "info"} <= set(command_names())


CONTRADICTIONS = [
    (["serve", "--port", "9000"], ["--port applies to HTTP serving", "--transport http"]),
    (["serve", "--token", "abc", "--no-dashboard"], ["--token, --no-dashboard apply to HTTP serving"]),
    (["serve", "--host", "0.0.0.0", "--allow-host", "x"], ["--host, --allow-host apply to HTTP serving"]),
    (["serve", "--transport", "stdio", "--path", "/x"], ["--path applies to HTTP serving"]),
    (["serve", "--hot-tool", "get_planning"], ["--hot-tool get_planning", "not served in facade mode", "--facade"]),
    (["serve", "--approve-all"], ["--approve-all", "no tool of team default needs one"]),
    (["serve", "--transport", "http", "--no-token", "--token", "abc"], ["--no-token contradicts the token"]),
    (["fetch-models", "--check", "--timeout", "5"], ["--timeout limits downloads, and --check downloads nothing"]),
    (["fetch-models", "--requirements", "--timeout", "5"], ["--requirements downloads nothing"]),
    (["backup", "--store", "a.db", "--root", "ws", "copy.db"], ["--root names the store kept under", "one of them"]),
    (["serve", "--trans", "http"], ["unrecognized arguments: --trans"]),  # options are never abbreviated
]


@pytest.mark.parametrize(("args", "named"), CONTRADICTIONS, ids=[" ".join(case[0]) for case in CONTRADICTIONS])
def test_options_that_would_do_nothing_are_refused(args: list[str], named: list[str], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TOOLCARDS_TOKEN"}
    done = toolcards(*args, cwd=tmp_path, env=env)

    assert done.returncode == 2, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("toolcards: error: ") and "Traceback" not in done.stderr
    for text in named:
        assert text in error


def test_what_the_options_do_not_contradict_is_accepted(tmp_path: Path) -> None:
    facade = tmp_path / "facade.yaml"
    facade.write_text("team_id: acme\nfacade: true\ncards:\n  - kind: planning\n")
    # The token from the environment is not an option given: stdio serving ignores it quietly.
    env = {**os.environ, "TOOLCARDS_TOKEN": "from-the-environment"}
    for args in (["serve"], ["serve", "--config", str(facade), "--hot-tool", "search_planning"], ["serve", "--facade"]):
        done = toolcards(*args, cwd=tmp_path, env=env)  # stdin is closed: it starts, then stops
        assert done.returncode == 0, (args, done.stderr)


def test_the_dashboard_shows_its_generated_token_once(team_store: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TOOLCARDS_TOKEN"}
    process = subprocess.Popen(
        [sys.executable, "-m", "toolcards.cli", "dashboard", "--port", "0"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        lines: list[str] = []
        while not (lines and "dashboard of team default at " in lines[-1]):
            line = process.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
        token = re.search(r"\?token=(\S+)", lines[-1])
        assert token, lines[-1]
    finally:
        process.send_signal(signal.SIGTERM)
        out, rest = process.communicate(timeout=60)
    assert ("".join(lines) + rest + out).count(token[1]) == 1


def test_every_install_hint_names_a_real_extra() -> None:
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    places = [REPO / "README.md", REPO / "Makefile", *(REPO / "docs").glob("*.md"), *(REPO / "src").rglob("*.py")]
    places += [*(REPO / "scripts").glob("*"), *(REPO / "bench").rglob("*.py")]
    named: dict[str, set[str]] = {}
    for path in places:
        for match in re.finditer(r"toolcards\[([A-Za-z0-9_,\s-]+)\]", path.read_text(encoding="utf-8")):
            for extra in match[1].split(","):
                named.setdefault(extra.strip(), set()).add(str(path.relative_to(REPO)))
    assert named, "no install hint found: the search is broken"
    assert {extra: where for extra, where in named.items() if extra not in extras} == {}


def test_a_missing_extra_s_hint_says_make_venv_in_a_clone() -> None:
    from toolcards.cli._console import install_hint

    hint = install_hint("dashboard")
    assert hint.startswith("pip install 'toolcards[dashboard]'") and "make venv" in hint
