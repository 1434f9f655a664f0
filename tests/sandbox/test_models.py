"""ExecLimits defaults, options validation, and what ExecResult.render shows a model."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from toolcards.sandbox import DEFAULT_ALLOWED_COMMANDS, BwrapOptions, ExecLimits, ExecResult, LocalOptions
from toolcards.sandbox._models import CAPTURE_MARKER


def test_limits_defaults_match_the_documented_ones() -> None:
    limits = ExecLimits()
    assert (limits.cpu_s, limits.memory_mb, limits.file_size_mb) == (30, 512, 100)
    assert (limits.max_processes, limits.open_files, limits.output_chars) == (256, 256, 20_000)


def test_limits_refuse_nonsense_values() -> None:
    with pytest.raises(ValidationError):
        ExecLimits(cpu_s=0)
    with pytest.raises(ValidationError):
        ExecLimits(unknown=1)  # type: ignore[call-arg]


def test_options_round_trip_through_json() -> None:
    options = BwrapOptions(allow_network=True, ro_binds=("/opt/tool",), env={"CI": "1"})
    assert BwrapOptions.model_validate_json(options.model_dump_json()) == options
    assert LocalOptions().allowed_commands == DEFAULT_ALLOWED_COMMANDS


def test_render_shows_exit_code_and_both_streams() -> None:
    text = ExecResult(command="x", exit_code=2, stdout="out\n", stderr="err\n").render()
    assert text.splitlines() == ["exit code: 2", "stdout:", "out", "stderr:", "err"]


def test_render_leaves_out_empty_streams_and_says_when_there_is_no_output() -> None:
    assert "stderr" not in ExecResult(command="x", exit_code=0, stdout="hi").render()
    assert ExecResult(command="x", exit_code=0).render() == "exit code: 0\n(no output)"


def test_render_shows_an_error_alone() -> None:
    result = ExecResult(command="psql", exit_code=None, error="CommandNotAllowedError: no")
    assert result.render() == "CommandNotAllowedError: no"
    assert not result.ok


def test_render_lists_notes_after_the_exit_code() -> None:
    result = ExecResult(command="x", exit_code=124, timed_out=True, notes=("timed out after 1 s",))
    assert result.render().splitlines()[:2] == ["exit code: 124", "[timed out after 1 s]"]


def test_render_cuts_a_long_stream_keeping_head_and_tail() -> None:
    stdout = "HEAD" + "x" * 50_000 + "TAIL"
    text = ExecResult(command="x", exit_code=0, stdout=stdout).render(max_chars=1_000)
    assert len(text) <= 1_100
    assert "HEAD" in text and text.endswith("TAIL")
    assert "characters cut from the middle of stdout" in text


def test_render_gives_a_short_stream_all_it_needs_and_the_rest_to_the_other() -> None:
    stderr = "E" * 100
    text = ExecResult(command="x", exit_code=1, stdout="o" * 10_000, stderr=stderr).render(max_chars=2_000)
    assert stderr in text
    assert text.count("o") > 1_200


def test_render_counts_what_capture_dropped_in_its_cut_note() -> None:
    dropped = 1_000_000
    stdout = "a" * 8_000 + "\n" + CAPTURE_MARKER.format(cut=dropped, name="stdout") + "\n" + "b" * 12_000
    result = ExecResult(command="x", exit_code=0, stdout=stdout, stdout_cut=dropped)
    text = result.render(max_chars=1_000)
    note = next(line for line in text.splitlines() if "characters cut" in line)
    cut = int(note.split()[1].replace(",", ""))
    assert cut > dropped


def test_render_keeps_the_capture_marker_when_no_further_cut_is_needed() -> None:
    marker = CAPTURE_MARKER.format(cut=500, name="stdout")
    result = ExecResult(command="x", exit_code=0, stdout=f"a\n{marker}\nb", stdout_cut=500)
    assert marker in result.render()
