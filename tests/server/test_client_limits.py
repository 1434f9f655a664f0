"""``ClientLimits``: its defaults, its checks, and the command-line options that set it."""

from __future__ import annotations

import pytest

from toolcards.cli import build_parser
from toolcards.cli._http_options import client_limits
from toolcards.server import ClientLimits


def test_defaults_and_refused_values() -> None:
    limits = ClientLimits()
    assert (limits.header_timeout_s, limits.body_timeout_s, limits.body_min_rate) == (10.0, 10.0, 1024.0)
    assert limits.max_header_bytes == 16 * 1024
    for field in ["header_timeout_s", "body_timeout_s", "body_min_rate", "max_header_bytes"]:
        with pytest.raises(ValueError, match=rf"ClientLimits\.{field} must be a positive number, not 0"):
            ClientLimits(**{field: 0})


@pytest.mark.parametrize("command", [["serve", "--transport", "http"], ["dashboard"]])
def test_the_options_set_the_limits_and_bad_values_are_usage_errors(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    parser = build_parser()
    assert client_limits(parser.parse_args(command)) == ClientLimits()
    args = parser.parse_args(
        [
            *command,
            "--header-timeout",
            "2.5",
            "--body-timeout",
            "3",
            "--body-min-rate",
            "100",
            "--max-header-bytes",
            "4096",
        ]
    )
    assert client_limits(args) == ClientLimits(
        header_timeout_s=2.5, body_timeout_s=3, body_min_rate=100, max_header_bytes=4096
    )
    for option, value in [("--header-timeout", "0"), ("--body-min-rate", "-1"), ("--max-header-bytes", "1.5")]:
        with pytest.raises(SystemExit) as exited:
            parser.parse_args([*command, option, value])
        assert exited.value.code == 2
        assert f"{value!r} is not a positive" in capsys.readouterr().err
