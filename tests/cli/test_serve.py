"""``toolcards serve``: real stdio and HTTP subprocesses, the HTTP token, shutdown on SIGTERM, refused binds."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest
from bench.serve_process import ServeProcess
from mcp import Client, StdioServerParameters

from tests.cli.conftest import REPO
from toolcards.cli import build_parser, main
from toolcards.cli._serve import build_config
from toolcards.server._config import DEFAULT_TEAM_CARDS
from toolcards.store import default_store


def serve_command(config: Path) -> list[str]:
    return [sys.executable, "-m", "toolcards.cli", "serve", "--config", str(config)]


def stops_recorded() -> int:
    return int(default_store().load("cli-team/#NotesTool").rows.get("meta", {}).get("stops", 0))


@pytest.mark.slow
def test_a_stdio_client_uses_the_team_and_its_state_is_flushed_on_exit(team_yaml: Path) -> None:
    command = serve_command(team_yaml)
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO), env=dict(os.environ))

    async def main_() -> tuple[str, str, str]:
        async with Client(params, client_info=types.Implementation(name="Stdio Agent", version="1")) as c:
            who = (await c.call_tool("whoami", {})).content[0]
            added = (await c.call_tool("add_note", {"text": "over stdio"})).content[0]
            board = (await c.read_resource("toolcards://cli-team/notes_board")).contents[0]
        assert isinstance(who, types.TextContent) and isinstance(added, types.TextContent)
        assert isinstance(board, types.TextResourceContents)
        return who.text, added.text, board.text

    who, added, board = asyncio.run(main_())
    assert (who, added) == ("@Stdio-Agent", "Added note 1.")
    assert "1. over stdio (@Stdio-Agent)" in board
    assert stops_recorded() == 1
    assert default_store().load("cli-team/#NotesTool").rows["notes"]["1"]["text"] == "over stdio"


@pytest.mark.slow
def test_sigterm_flushes_every_actor_before_exit(team_yaml: Path) -> None:
    process = subprocess.Popen(
        serve_command(team_yaml), cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        seen: list[str] = []
        while not any("serving team cli-team over stdio" in line for line in seen):
            line = process.stderr.readline().decode()
            assert line, "".join(seen)
            seen.append(line)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err.decode()
    assert out == b""  # stdout carries the protocol only
    assert "ending sessions and flushing state" in err.decode()
    assert stops_recorded() == 1


def test_a_public_bind_without_a_token_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--transport", "http", "--host", "0.0.0.0", "--no-token"]) == 2
    assert "--no-token is refused on --host 0.0.0.0" in capsys.readouterr().err


def test_command_line_options_override_the_config(team_yaml: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = build_parser().parse_args(
        ["serve", "--config", str(team_yaml), "--facade", "--hot-tool", "echo", "--approve-all", "--team", "other"]
    )
    config = build_config(args)
    assert (config.team_id, config.facade, config.hot_tools, config.approve_all) == ("other", True, ["echo"], True)
    monkeypatch.setenv("TOOLCARDS_TOKEN", "from-env")
    assert build_parser().parse_args(["serve"]).token == "from-env"
    defaults = build_config(build_parser().parse_args(["serve"]))
    assert [card["kind"] for card in defaults.cards] == list(DEFAULT_TEAM_CARDS)


@pytest.mark.slow
def test_http_serving_in_process_until_sigint(team_yaml: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from toolcards.cli import _serve as serve

    messages: list[str] = []
    answers: list[str] = []

    def call_then_interrupt(url: str) -> None:
        async def whoami() -> str:
            async with Client(url, client_info=types.Implementation(name="Kim", version="1")) as c:
                part = (await c.call_tool("whoami", {})).content[0]
            assert isinstance(part, types.TextContent)
            return part.text

        try:
            answers.append(asyncio.run(whoami()))
        finally:
            os.kill(os.getpid(), signal.SIGINT)

    def record(message: str) -> None:
        messages.append(message)
        if message.startswith("serving team"):
            threading.Thread(target=call_then_interrupt, args=(message.rsplit(" ", 1)[-1],), daemon=True).start()

    monkeypatch.setattr(serve, "progress", record)
    assert main(["serve", "--config", str(team_yaml), "--transport", "http", "--port", "0"]) == 0
    assert answers == ["@Kim"]
    assert messages[-3:] == ["SIGINT: stopping", "ending sessions and flushing state", "stopped"]
    assert stops_recorded() == 1


def test_a_workspaces_root_without_working_locks_is_refused_at_start_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolcards.workspace import _tool as workspace_tool

    reason = "file locks do not work on /mnt/x (nfs: mounted with locks local to this host): put it elsewhere"
    monkeypatch.setattr(workspace_tool, "probe_tree_locks", lambda: reason)
    config = tmp_path / "team.yaml"
    config.write_text("team_id: locks\ncards:\n  - kind: workspace\n")

    assert main(["serve", "--config", str(config), "--store", str(tmp_path / "state.db")]) == 1

    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert errors == [f"toolcards: error: Cannot bind cards: WorkspaceTool: {reason}."]


def test_serve_says_which_store_it_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "elsewhere.db"))
    config = tmp_path / "team.yaml"
    config.write_text("team_id: which\ncards: []\nhot_tools: [missing]\n")

    assert main(["serve", "--config", str(config), "--store", "postgresql://nobody:pw@127.0.0.1:1/none"]) == 1

    err = capsys.readouterr().err
    assert "pw" not in err
    assert err.count("toolcards: error:") == 1


def status_of(url: str, headers: dict[str, str] | None = None, *, method: str = "POST") -> int:
    import urllib.error
    import urllib.request

    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    body += b'"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}'
    request = urllib.request.Request(
        url,
        data=body if method == "POST" else None,
        method=method,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.slow
def test_http_serve_generates_a_token_and_prints_it_once(team_yaml: Path) -> None:
    import re

    process = ServeProcess(team_yaml, dict(os.environ))
    try:
        line = process.announcement()
        found = re.fullmatch(r"toolcards: serving team cli-team at (http://127\.0\.0\.1:\d+/mcp)\?token=(\S+)", line)
        assert found, line
        endpoint, token = found[1], found[2]
        assert status_of(endpoint) == 401
        assert status_of(endpoint, {"Authorization": f"Bearer {token}"}) == 200
        assert status_of(f"{endpoint}?token={token}") == 200

        async def whoami() -> str:
            async with Client(
                f"{endpoint}?token={token}", client_info=types.Implementation(name="Lu", version="1")
            ) as c:
                part = (await c.call_tool("whoami", {})).content[0]
            assert isinstance(part, types.TextContent)
            return part.text

        assert asyncio.run(whoami()) == "@Lu"
        # The dashboard's line, printed next, points to the token above instead of repeating it.
        dashboard = process.line_after_announcement().strip()
        root = endpoint.removesuffix("/mcp") + "/"
        assert dashboard.startswith(f"toolcards: dashboard at {root} (open it once with the token above"), dashboard
        assert token not in dashboard
        assert status_of(f"{root}?token={token}", method="GET") == 200  # the token above opens it
    finally:
        rest = process.stop()
    assert token not in rest  # printed once, at start, never again


@pytest.mark.slow
def test_http_serve_does_not_print_a_token_it_was_given(team_yaml: Path) -> None:
    process = ServeProcess(team_yaml, {**os.environ, "TOOLCARDS_TOKEN": "given-token-123"}, keep_token=True)
    try:
        line = process.announcement()
        assert "given-token-123" not in line and "?token=" not in line
        endpoint = line.split(" at ", 1)[1].split(" ", 1)[0]
        assert status_of(endpoint) == 401
        assert status_of(endpoint, {"Authorization": "Bearer given-token-123"}) == 200
    finally:
        rest = process.stop()
    assert "given-token-123" not in rest


@pytest.mark.slow
def test_http_serve_without_a_token_on_loopback_says_so(team_yaml: Path) -> None:
    process = ServeProcess(team_yaml, dict(os.environ), "--no-token")
    try:
        line = process.announcement()
        assert "without a token (--no-token)" in line
        assert status_of(line.split(" at ", 1)[1].split(" ", 1)[0]) == 200
    finally:
        process.stop()


def test_a_failure_while_serving_is_reported_itself_not_as_a_task_group(
    team_yaml: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolcards.server import _http as http

    async def broken(*args: object, **kwargs: object) -> None:
        raise OSError("the network went away")

    monkeypatch.setattr(http, "serve_http", broken)
    assert main(["serve", "--config", str(team_yaml), "--transport", "http", "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == "toolcards: error: the network went away"
    assert "TaskGroup" not in err and "Traceback" not in err
    assert stops_recorded() == 1  # the team was still closed and flushed
