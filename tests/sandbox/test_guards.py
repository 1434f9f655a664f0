"""The allowlist on a command's first word."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcards.core._deadline import deadline_after
from toolcards.errors import ToolTimeout
from toolcards.sandbox import DEFAULT_ALLOWED_COMMANDS
from toolcards.sandbox._guards import MAX_COMMAND_CHARS, _words, check_allowed, command_name


@pytest.mark.parametrize(
    ("cmd", "name"),
    [
        ("pytest -q", "pytest"),
        ("FOO=1 BAR='a b' python -m x", "python"),
        ("./.venv/bin/python script.py", "python"),
        ("/usr/bin/git status", "git"),
        ("'my tool' --flag", "my tool"),
        ("make && psql", "make"),
        ("", ""),
        ("A=1", ""),
    ],
)
def test_command_name_reads_the_first_program(cmd: str, name: str) -> None:
    assert command_name(cmd) == name


def split_or_error(text: str) -> object:
    try:
        return list(_words(text))
    except ValueError as exc:
        return ("error", str(exc))


def shlex_or_error(text: str) -> object:
    try:
        return shlex.split(text)
    except ValueError as exc:
        return ("error", str(exc))


@settings(max_examples=3_000, derandomize=True, deadline=None)
@given(st.text(alphabet="ab= '\"\\\t\n\r#$", max_size=16))
def test_words_are_read_as_shlex_split_reads_them(text: str) -> None:
    assert split_or_error(text) == shlex_or_error(text)


def test_quoting_after_the_first_word_is_left_to_the_shell() -> None:
    assert command_name("echo 'unclosed") == "echo"
    assert check_allowed("echo 'unclosed", ["echo"]) is None


def test_a_command_over_the_length_limit_is_refused_unread() -> None:
    message = check_allowed("echo " + "a" * 2_000_000, ["echo"])
    assert message is not None and "2,000,005 characters long; the limit is 65,536" in message
    assert check_allowed("echo " + "a" * (MAX_COMMAND_CHARS - 5), ["echo"]) is None


@pytest.mark.parametrize(
    "cmd",
    [
        "x" * MAX_COMMAND_CHARS,
        '"' + "\\a" * (MAX_COMMAND_CHARS // 2 - 1) + '"',
        "A=1 " * (MAX_COMMAND_CHARS // 4),
        "'" * MAX_COMMAND_CHARS,
    ],
    ids=["one-word", "escapes-in-quotes", "assignments", "empty-quotes"],
)
def test_reading_the_longest_command_is_linear(cmd: str) -> None:
    # shlex took ~150 ms at 100,000 characters and ~50 s at 2 MB; this reader is linear.
    # No time is asserted (machines differ): a deadline that passed makes it stop instead.
    command_name(cmd)
    with deadline_after(-1), pytest.raises(ToolTimeout):
        command_name(cmd)


def test_allowed_command_passes() -> None:
    assert check_allowed("FOO=1 pytest -q", DEFAULT_ALLOWED_COMMANDS) is None


def test_refused_command_names_itself_and_lists_the_allowed_ones() -> None:
    message = check_allowed("psql -c 'select 1'", ["python", "git"])
    assert (
        message == "CommandNotAllowedError: Command 'psql' is not in the allowed commands list. Allowed: [python, git]"
    )


def test_cd_refusal_points_to_the_cwd_argument() -> None:
    message = check_allowed("cd src && pytest", DEFAULT_ALLOWED_COMMANDS)
    assert message is not None and "cwd argument" in message


def test_empty_allowlist_allows_everything() -> None:
    assert check_allowed("psql", ()) is None


def test_unparsable_and_empty_commands_are_reported_not_raised() -> None:
    unclosed = check_allowed("'echo oops", DEFAULT_ALLOWED_COMMANDS)
    assert unclosed is not None and "quoting" in unclosed
    empty = check_allowed("   ", DEFAULT_ALLOWED_COMMANDS)
    assert empty is not None and empty.startswith("SandboxError:")
