"""Mistakes at the command line, seen from outside: the real CLI in a subprocess.

Every case runs ``python -m toolcards.cli ...`` in a fresh temporary directory with its own
workspaces root, and checks the same rule (:func:`assert_one_error`):

* **exit code** 2 for a usage error — the command line itself is wrong: an option value,
  options that contradict each other, a file, kind, tool or command that does not exist —
  and 1 for any other failure: a config file's content, a store or a port that cannot be
  used, a package that is not installed;
* **stderr** holds exactly one error line, the last one: ``toolcards: error: ...`` (or, for
  a slash command ``toolcards call`` cannot run, the command's own ``Error: ...`` line),
  which names the bad value and says how to fix it. Before it there may only be progress
  lines the command printed before the failure was known (``toolcards: starting team ...``,
  ``toolcards: team ... ready: ...``); no other line, and no traceback;
* **it ends**: every subprocess runs under a timeout, so a hang fails the test.

``--debug`` is the one way to get the traceback, checked last.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from toolcards.store import SQLiteStore

pytestmark = pytest.mark.slow

TIMEOUT_S = 60
PROGRESS = re.compile(r"toolcards: (starting team \S+ \(|team \S+ ready: )")

# Runs the CLI with the mcp extra "not installed": importing mcp (or uvicorn) fails.
WITHOUT_MCP = """
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mcp", "mcp_types", "uvicorn"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from toolcards.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty directory holding the configs the cases name."""
    directory = tmp_path / "work"
    directory.mkdir()
    (directory / "unknown-kind.yaml").write_text("team_id: acme\ncards:\n  - kind: nosuchkind\n")
    (directory / "unknown-field.yaml").write_text("team_id: acme\ncards:\n  - kind: planning\n    nosuchfield: 3\n")
    (directory / "unknown-key.yaml").write_text("team_id: acme\nbogus_option: 1\n")
    (directory / "broken.yaml").write_text("team_id: [acme\ncards: []\n")
    (directory / "hot.yaml").write_text("team_id: acme\ncards:\n  - kind: planning\n")
    # The team's store exists, as it does once a team was started: call reads a team, never starts one.
    (tmp_path / "workspaces" / ".toolcards").mkdir(parents=True)
    SQLiteStore(tmp_path / "workspaces" / ".toolcards" / "state.db").close()
    return directory


@pytest.fixture
def port_in_use() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def run_cli(workdir: Path, *args: str, program: list[str] | None = None) -> Outcome:
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLCARDS_STORE", "TOOLCARDS_TOKEN")}
    env["TOOLCARDS_WORKSPACES_ROOT"] = str(workdir.parent / "workspaces")
    completed = subprocess.run(
        [*(program or [sys.executable, "-m", "toolcards.cli"]), *args],
        check=False,
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    return Outcome(completed.returncode, completed.stdout, completed.stderr)


def assert_one_error(outcome: Outcome, code: int, *named: str, prefix: str = "toolcards: error: ") -> str:
    """Check the module's rule; returns the error line."""
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    assert "Traceback" not in outcome.stderr, outcome.stderr
    assert lines, "nothing on stderr"
    *before, error = lines
    assert all(PROGRESS.match(line) for line in before), outcome.stderr
    assert error.startswith(prefix), outcome.stderr
    for value in named:
        assert value in error, f"{value!r} not named in: {error}"
    assert outcome.code == code, f"exit code {outcome.code}, not {code}: {outcome.stderr}"
    return error


# -- serve ---------------------------------------------------------------------------------


SERVE_MISTAKES = [
    # Usage errors: caught while the command line is read, before anything starts.
    (["--transport", "http", "--port", "99999"], 2, ["--port", "99999", "0 to 65535"]),
    (["--transport", "http", "--port", "http"], 2, ["--port", "'http'"]),
    (["--agent", "@@@"], 2, ["--agent", "'@@@'", "letters, digits"]),
    (["--transport", "http", "--path", "mcp"], 2, ["--path", "'mcp'", "/mcp"]),
    (["--transport", "http", "--token", ""], 2, ["--token", "empty"]),
    (["--transport", "http", "--token", "two words"], 2, ["--token", "printable ASCII"]),
    (["--transport", "http", "--host", "0.0.0.0", "--no-token"], 2, ["--no-token", "0.0.0.0", "127.0.0.1"]),
    (["--transport", "http", "--no-token", "--token", "s3cret"], 2, ["--no-token", "drop one"]),
    (["--transport", "carrier-pigeon"], 2, ["--transport", "carrier-pigeon", "stdio", "http"]),
    (["--config", "missing.yaml"], 2, ["--config missing.yaml", "no such file"]),
    (["--config", "."], 2, ["--config .", "directory"]),
    (["--team", ""], 2, ["--team ''", "at least 1 character"]),
    (["--config", "hot.yaml", "--facade", "--hot-tool", "no_such_tool"], 2, ["no_such_tool", "get_planning"]),
    # Failures of what the command line names.
    (["--config", "unknown-kind.yaml"], 1, ["unknown-kind.yaml", "'nosuchkind'", "Known kinds: exec"]),
    (["--config", "unknown-field.yaml"], 1, ["unknown-field.yaml", "nosuchfield", "toolcards cards"]),
    (["--config", "unknown-key.yaml"], 1, ["unknown-key.yaml", "bogus_option"]),
    (["--config", "broken.yaml"], 1, ["broken.yaml", "not valid YAML", "line 2"]),
    (["--store", "no/such/dir/state.db"], 1, ["no/such/dir", "does not exist", "mkdir -p"]),
    (["--transport", "http", "--host", "nosuch.invalid"], 1, ["nosuch.invalid", "does not resolve"]),
]


@pytest.mark.parametrize(
    ("args", "code", "named"), [pytest.param(*case, id=" ".join(case[0])) for case in SERVE_MISTAKES]
)
def test_a_serve_mistake_is_one_line(workdir: Path, args: list[str], code: int, named: list[str]) -> None:
    assert_one_error(run_cli(workdir, "serve", *args), code, *named)


def test_a_port_in_use_is_one_line_and_nothing_starts(workdir: Path, port_in_use: int) -> None:
    outcome = run_cli(workdir, "serve", "--transport", "http", "--port", str(port_in_use))
    error = assert_one_error(outcome, 1, f"127.0.0.1:{port_in_use}", "in use", "another port")
    # The port is bound before the team starts: no progress line, nothing to stop.
    assert outcome.stderr.strip() == error


def test_without_the_mcp_extra_serve_says_what_to_install(workdir: Path) -> None:
    outcome = run_cli(workdir, "serve", program=[sys.executable, "-c", WITHOUT_MCP])
    assert_one_error(outcome, 1, "No module named 'mcp'", "pip install 'toolcards[mcp]'", "make venv")
    # toolcards call does not need it.
    assert run_cli(workdir, "call", "/get_planning", program=[sys.executable, "-c", WITHOUT_MCP]).code == 0


# -- cards and call ------------------------------------------------------------------------


def test_an_unknown_card_kind_is_a_usage_error(workdir: Path) -> None:
    outcome = run_cli(workdir, "cards", "nosuchkind", "planning")
    assert_one_error(outcome, 2, "'nosuchkind'", "Known kinds: exec")
    assert outcome.stdout == ""  # nothing is described when one kind is wrong


CALL_MISTAKES = [
    (["/get_planning_task", "task_id=abc"], 2, ["get_planning_task", "task_id", "'abc'"]),
    (["/get_planning_task"], 2, ["task_id", "Field required"]),
    (["/update_planning", "create_tasks=not json"], 2, ["create_tasks", "valid list"]),
    (["/no_such_command"], 2, ["/no_such_command", "Known commands: /cancel_reminder, /claim_task, /exec_command"]),
    (['/get_planning_task "unclosed'], 2, ['"unclosed', "never closed"]),
    (["/get_planning_task", "task_id=41"], 1, ["41"]),
]


@pytest.mark.parametrize(
    ("command", "code", "named"), [pytest.param(*case, id=" ".join(case[0])) for case in CALL_MISTAKES]
)
def test_a_call_that_cannot_run_is_one_line(workdir: Path, command: list[str], code: int, named: list[str]) -> None:
    outcome = run_cli(workdir, "call", *command)
    assert_one_error(outcome, code, *named, prefix="Error: ")
    assert outcome.stdout == ""


def test_call_options_are_checked_like_serve_ones(workdir: Path) -> None:
    assert_one_error(run_cli(workdir, "call", "--agent", "@@@", "/get_planning"), 2, "--agent", "'@@@'")
    assert_one_error(run_cli(workdir, "call", "--config", "missing.yaml"), 2, "--config missing.yaml")
    assert_one_error(run_cli(workdir, "call", "--config", "unknown-kind.yaml"), 1, "'nosuchkind'")


def test_an_unknown_command_is_a_usage_error(workdir: Path) -> None:
    assert_one_error(run_cli(workdir, "serv"), 2, "'serv'", "serve", "toolcards --help")


def test_debug_shows_the_traceback(workdir: Path) -> None:
    outcome = run_cli(workdir, "--debug", "serve", "--config", "unknown-kind.yaml")
    assert outcome.code == 1
    assert "Traceback" in outcome.stderr and "WiringError" in outcome.stderr
