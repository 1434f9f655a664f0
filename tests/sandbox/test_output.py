"""What a command prints, as the model reads it: characters, not bytes, per backend that runs here.

The files are written by the test and printed with ``cat``, so the bytes a command writes are
exactly the test's; pipe reads then split multibyte characters wherever they fall.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandbox.conftest import HOST_BACKENDS, StartSandbox, backend_class, run_via_proxy
from toolcards import ToolFactory
from toolcards.fs._locations import workspace_dir
from toolcards.sandbox import ExecLimits
from toolcards.sandbox._models import CAPTURE_MARKER
from toolcards.sandbox._process import OutputCapture
from toolcards.sandbox._tool import ExecCommandParam, ExecTool
from toolcards.testing import FakeObserver

WIDE = "é€😀漢"
"""One character of each UTF-8 length but one: 2, 3, 4 and 3 bytes."""

BOTH_STREAMS = "cat out.txt; cat out.txt >&2"


@pytest.mark.parametrize(
    "text",
    [
        "é" * 900,
        "€" * 900,
        "😀" * 900,
        "漢" * 900,
        "€" * 300,  # 900 bytes: fits a byte cap too, but 400 bytes of head would split a character
        "head\n" + WIDE * 225 + "\ntail",
    ],
    ids=["2-byte", "3-byte", "4-byte", "cjk", "3-byte-short", "mixed"],
)
def test_multibyte_output_within_the_limit_comes_back_whole(sandbox: StartSandbox, workspace: Path, text: str) -> None:
    (workspace / "out.txt").write_bytes(text.encode())
    result = run_via_proxy(sandbox(ExecLimits(output_chars=1_000)), BOTH_STREAMS)
    assert result.exit_code == 0, result.render()
    assert (result.stdout, result.stderr) == (text, text)
    assert (result.stdout_cut, result.stderr_cut) == (0, 0)


def test_a_long_multibyte_stream_is_cut_between_characters_and_counted_in_characters(
    sandbox: StartSandbox, workspace: Path
) -> None:
    text = "".join(chr(ord("A") + index % 26) + WIDE for index in range(40_000))  # 200,000 characters, 520 KB
    (workspace / "out.txt").write_bytes(text.encode())
    result = run_via_proxy(sandbox(ExecLimits(output_chars=1_000)), BOTH_STREAMS)
    assert result.exit_code == 0, result.render()
    for name, captured, cut in (
        ("stdout", result.stdout, result.stdout_cut),
        ("stderr", result.stderr, result.stderr_cut),
    ):
        # The first two fifths and the last three fifths of 1,000 characters, whatever their bytes.
        marker = CAPTURE_MARKER.format(cut=len(text) - 1_000, name=name)
        assert captured == f"{text[:400]}\n{marker}\n{text[-600:]}"
        assert cut == len(text) - 1_000


def test_invalid_bytes_are_replaced_as_a_decode_of_the_whole_output_replaces_them(
    sandbox: StartSandbox, workspace: Path
) -> None:
    data = b"ok \xff\xfe then " + "€".encode() * 3 + b" and a character the end cuts off: " + "€".encode()[:2]
    (workspace / "out.txt").write_bytes(data)
    result = run_via_proxy(sandbox(ExecLimits(output_chars=1_000)), "cat out.txt")
    assert result.stdout == data.decode("utf-8", "replace")


def test_a_character_split_across_reads_is_kept_whole() -> None:
    text = WIDE * 10 + "end"  # 43 characters, 123 bytes
    capture = OutputCapture(100)
    for byte in text.encode():
        capture.add(bytes([byte]))
    assert capture.text("stdout") == text
    assert (capture.cut, capture.chars, capture.total) == (0, len(text), len(text.encode()))


# -- the answer exec_command gives ---------------------------------------------------------------


def _body(answer: str) -> str:
    """The rendered stream inside the untrusted envelope."""
    return answer.split("stdout:\n", 1)[1].rsplit("\n[END UNTRUSTED", 1)[0]


@pytest.mark.parametrize("mode", HOST_BACKENDS)
def test_the_answer_counts_every_character_it_leaves_out_and_says_how_to_keep_them(
    mode: str, alice: FakeObserver
) -> None:
    backend_class(mode)  # skips where bwrap cannot run
    card = ExecTool(mode=mode, allowed_commands=[], limits=ExecLimits(output_chars=2_000))
    run = ToolFactory([card], observer=alice).get_commands()[ExecCommandParam]
    text = "".join(f"{index} {WIDE}\n" for index in range(20_000)) + "last line"
    root = workspace_dir(alice.team_id)
    (root / "big.txt").write_bytes(text.encode())

    head, note, tail = _split_at_note(_body(run(cmd="cat big.txt")))
    assert text.startswith(head) and text.endswith(tail) and "\ufffd" not in head + tail
    count = int(note.split()[1].replace(",", ""))
    assert len(head) + count + len(tail) == len(text)
    # What is cut is not kept anywhere; the note says how to keep it, and that works.
    assert "not kept" in note and "(cmd > out.log 2>&1)" in note
    assert "exit code: 0" in run(cmd="cat big.txt > out.log 2>&1")
    assert (root / "out.log").read_bytes() == text.encode()


def _split_at_note(body: str) -> tuple[str, str, str]:
    """``(head, note, tail)`` of a stream cut by the renderer."""
    head, rest = body.split("\n[... ", 1)
    note, tail = rest.split(" ...]\n", 1)
    return head, f"[... {note} ...]", tail
