"""``toolcards dashboard``: its options, and its mistakes in one line before anything starts."""

from __future__ import annotations

import contextlib
import subprocess
import sys

import pytest

from toolcards.cli import build_parser, main


def test_the_options_and_their_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLCARDS_TOKEN", raising=False)
    args = build_parser().parse_args(["dashboard", "--team", "acme", "--store", ":memory:"])
    assert (args.host, args.port, args.token, args.no_token, args.team, args.store) == (
        "127.0.0.1",
        8766,
        None,
        False,
        "acme",
        ":memory:",
    )
    monkeypatch.setenv("TOOLCARDS_TOKEN", "from-env")
    assert build_parser().parse_args(["dashboard"]).token == "from-env"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--no-token", "--host", "0.0.0.0"], "--no-token is refused on --host 0.0.0.0"),
        (["--no-token", "--token", "abc"], "--no-token contradicts the token given"),
        (["--port", "70000"], "is not a port"),
        (["--config", "missing.yaml"], "--config missing.yaml: no such file"),
    ],
)
def test_mistakes_end_in_one_line_with_exit_code_2(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLCARDS_TOKEN", raising=False)
    # argparse's own errors exit; the command's checks return the code.
    with pytest.raises(SystemExit) if "--port" in argv else contextlib.nullcontext():
        code = main(["dashboard", *argv])
        assert code == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1


def test_the_command_line_loads_no_dashboard_until_one_is_built() -> None:
    # Every command reads the dashboard's default port to build its parser.
    code = (
        "import sys; from toolcards.cli import build_parser; build_parser();"
        "import toolcards.dashboard as d; port = d.DEFAULT_DASHBOARD_PORT;"
        "print(port, sorted(m for m in sys.modules if m.startswith('toolcards.dashboard.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split(maxsplit=1) == ["8766", "['toolcards.dashboard._serve']\n"]
