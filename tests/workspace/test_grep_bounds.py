"""grep stays bounded in memory and time whatever the files and arguments hold.

Long lines are shown as a window around their match, identically by ripgrep and by ``re``
confirming an index's candidates; the
output read from ripgrep is capped and the answer says so; FIFOs and sockets in the tree
are skipped without blocking; a passed deadline stops the work; the worst arguments get an
answer (a result or a clear error) at once. Peak memory is measured in child processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.workspace.grep_roads import ROADS, close_indexes, search
from tests.workspace.hostile import answer_within, bound_unix_socket
from toolcards.core._deadline import deadline_after
from toolcards.errors import ToolTimeout
from toolcards.workspace import _grep as grep_module
from toolcards.workspace import _ripgrep as ripgrep_module
from toolcards.workspace._glob import MAX_WALK_DEPTH
from toolcards.workspace._grep import MAX_GREP_LINE_CHARS, grep


@pytest.fixture(scope="module", autouse=True)
def _indexes_closed() -> Iterator[None]:
    yield
    close_indexes()


def shown_text(out: str) -> str:
    """The text of a one-line answer, after ``path:line: ``."""
    return out.split(": ", 1)[1]


# -- long lines -------------------------------------------------------------------------


def line_with(needle_at: int, length: int, fill: str = "x") -> str:
    return fill * needle_at + "needle" + fill * (length - needle_at - 6)


LONG_LINES: dict[str, bytes] = {
    # Shown whole by ripgrep, windowed from its text.
    "middle.txt": line_with(700, 1000).encode() + b"\n",
    # Longer than ripgrep's 4,096-byte preview: the match inside it, then past it.
    "in_preview.txt": line_with(2000, 9000).encode() + b"\nafter\n",
    "past_preview.txt": b"first line\n" + line_with(50_000, 80_000).encode() + b"\n",
    # Past 64 K characters: left to ripgrep even among an index's candidates.
    "huge.txt": line_with(1_000_000, 1_500_000).encode() + b"\n",
    "multibyte.txt": line_with(6000, 20_000, fill="é").encode() + b"\n",
    "emoji.txt": line_with(5000, 12_000, fill="\U0001f600").encode() + b"\n",
    "crlf.txt": b"short\r\n" + ("y" * 10_000 + "needle").encode() + b"\r\nlast\r\n",
    "at_end.txt": ("z" * 10_000 + "needle").encode(),
    "utf16.txt": b"\xff\xfe" + ("one\n" + line_with(7000, 10_000) + "\n").encode("utf-16-le"),
    "invalid.txt": b"\x80\xfe\xfd" * 3000 + b"needle" + b"\xe9" * 3000 + b"\n",
    "bom.txt": b"\xef\xbb\xbf" + line_with(5000, 9000).encode() + b"\n",
}


@pytest.fixture(scope="module")
def long_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each long line's file in a directory of its own (named after it) beside two files that
    cannot match, so that an index narrows a search of the directory to that file."""
    root = tmp_path_factory.mktemp("long")
    for name, content in LONG_LINES.items():
        (root / name).mkdir()
        (root / name / name).write_bytes(content)
        (root / name / "other.txt").write_text("nothing here\n")
        (root / name / "more.txt").write_text("nor here\n")
    return root


@pytest.mark.parametrize("name", sorted(LONG_LINES))
@pytest.mark.parametrize("indexed", ROADS)
def test_a_long_line_shows_a_window_around_its_match(long_tree: Path, name: str, indexed: bool) -> None:
    out = search(long_tree, "needle", name, indexed=indexed)
    assert "\n" not in out
    text = shown_text(out)
    assert "needle" in text
    assert len(text.strip("…")) <= MAX_GREP_LINE_CHARS
    # The window starts 100 characters before the match, unless the line starts nearer.
    assert text.startswith("…")
    assert text.index("needle") == 101


@pytest.mark.parametrize("name", sorted(LONG_LINES))
@pytest.mark.parametrize("pattern", ["needle", "needle$", "eedl", r"\bneedle", "(?i)NEEDLE", r"needle\w"])
def test_ripgrep_and_the_index_show_the_same_window(long_tree: Path, name: str, pattern: str) -> None:
    assert search(long_tree, pattern, name, indexed=True) == search(long_tree, pattern, name, indexed=False)


@pytest.mark.parametrize("indexed", ROADS)
def test_a_match_at_the_start_of_a_long_line_shows_its_start(long_tree: Path, indexed: bool) -> None:
    text = shown_text(search(long_tree, "^x", "past_preview.txt", indexed=indexed))
    assert text == "x" * MAX_GREP_LINE_CHARS + "…"


@pytest.mark.parametrize("indexed", ROADS)
def test_a_match_at_the_end_of_a_long_line_shows_no_trailing_mark(long_tree: Path, indexed: bool) -> None:
    text = shown_text(search(long_tree, "needle$", "crlf.txt", indexed=indexed))
    assert text == "…" + "y" * 100 + "needle"


# -- the output cap ---------------------------------------------------------------------


def test_output_past_the_cap_is_cut_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_module, "MAX_GREP_OUTPUT_BYTES", 4096)
    monkeypatch.setattr(ripgrep_module, "MAX_GREP_OUTPUT_BYTES", 4096)
    for index in range(40):
        (tmp_path / f"f{index:02}.txt").write_text("hit " + "." * 200 + "\n" * 3 + "hit again\n")
    lines = grep(tmp_path, "hit").splitlines()
    note = lines[-1]
    assert note.startswith("(results cut: the search stopped after 0 MB of matching lines; showing ")
    assert "narrow the pattern, path or include" in note
    shown = lines[:-1]
    assert 0 < len(shown) < 80
    assert all(":1: hit" in line or ":4: hit again" in line for line in shown)


@pytest.mark.parametrize("indexed", ROADS)
def test_matches_in_a_binary_file_are_dropped_whatever_comes_between(tmp_path: Path, indexed: bool) -> None:
    # Names with line breaks and with the text of ripgrep's binary note cannot confuse the parser
    # (and are shown with their line breaks escaped, so they cannot forge lines of the answer).
    (tmp_path / "a.bin").write_bytes(b"hit\n" * 5 + b"\x00")
    (tmp_path / "b\nc.txt").write_text("hit\n")
    (tmp_path / 'd: binary file matches (found "\\0" byte around offset 1)\ne.txt').write_text("hit\n")
    (tmp_path / "f.bin").write_bytes(b"hit\n" + b"\x00" + b"hit\n")
    for filler in range(6):  # so that an index narrows the search to the four files above
        (tmp_path / f"filler{filler}.txt").write_text("nothing here\n")
    assert search(tmp_path, "hit", indexed=indexed) == (
        'b\\nc.txt:1: hit\nd: binary file matches (found "\\0" byte around offset 1)\\ne.txt:1: hit'
    )


def test_a_line_the_tree_does_not_hold_is_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As ripgrep reports a file it read through a directory swapped for a symlink meanwhile.
    (tmp_path / "a.txt").write_text("hit inside\n")
    (tmp_path / "b.txt").write_text("hit b\n")
    script = "printf './a.txt\\0001:1:0:hit outside\\n./b.txt\\0001:1:0:hit b\\n./c.txt\\0001:1:0:hit c\\n'"
    use_fake_rg(tmp_path, monkeypatch, script)
    assert grep(tmp_path, "hit") == (
        "b.txt:1: hit b\n(2 matching lines were left out: their files changed while being searched)"
    )


def test_lines_of_one_file_are_each_checked_against_the_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The file is read again once for all its lines, but each line is compared on its own.
    (tmp_path / "a.txt").write_text("hit one\nmiss\nhit three\n")
    records = [
        "./a.txt\\0001:1:0:hit one",
        "./a.txt\\0002:1:8:hit two",  # the tree holds "miss" there
        "./a.txt\\0003:1:13:hit three",
    ]
    use_fake_rg(tmp_path, monkeypatch, "printf '" + "\\n".join(records) + "\\n'")
    assert grep(tmp_path, "hit") == (
        "a.txt:1: hit one\na.txt:3: hit three\n(1 matching line was left out: its file changed while being searched)"
    )


def test_a_malformed_record_is_skipped_and_the_next_ones_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.txt").write_text("hit a\n")
    (tmp_path / "b.txt").write_text("x\nhit b\n")
    # The middle record has no numbers; the last has no column (ripgrep's form for an empty
    # match at the end of a line), so its second number is the offset.
    use_fake_rg(
        tmp_path, monkeypatch, "printf './a.txt\\0001:1:0:hit a\\n./a.txt\\000x:y:hit\\n./b.txt\\0002:2:hit b\\n'"
    )
    assert grep(tmp_path, "hit") == "a.txt:1: hit a\nb.txt:2: hit b"


def slow_writer(tmp_path: Path, files: int) -> str:
    """A fake ripgrep writing one record per file, 20 ms apart, as ripgrep writes a file's lines when it is done."""
    for index in range(files):
        (tmp_path / f"f{index:02}.txt").write_text("hit\n")
    steps = [f"printf './f{index:02}.txt\\0001:1:0:hit\\n'; sleep 0.02" for index in range(files)]
    return fake_rg_in_bin(tmp_path, "\n".join(steps))


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no-pidfd"])
def test_ripgrep_is_read_when_it_ends_not_at_every_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pidfd: bool
) -> None:
    # Waking for each of ripgrep's writes cost more CPU than the rest of a search. With
    # its pipes left unwatched between wakes that never come, only ripgrep's exit wakes
    # the search, and the answer is still whole; without a pidfd the pipes are watched.
    rg = slow_writer(tmp_path, 20)
    monkeypatch.setattr(grep_module, "find_rg", lambda: rg)
    monkeypatch.setattr(ripgrep_module, "_IDLE_WAIT_S", 60.0)
    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    elif not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfd on this platform")
    reads = 0
    real_read = os.read

    def counting_read(fd: int, size: int) -> bytes:
        nonlocal reads
        reads += 1
        return real_read(fd, size)

    monkeypatch.setattr(os, "read", counting_read)
    answer = answer_within(30, lambda: grep(tmp_path, "hit"))
    assert answer.splitlines() == [f"f{index:02}.txt:1: hit" for index in range(20)]
    if pidfd:
        assert reads < 10
    else:
        assert reads >= 20


def test_each_file_and_directory_shown_is_opened_once_per_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "many.txt").write_text("".join(f"hit {n}\n" for n in range(20)))
    (tmp_path / "d" / "other.txt").write_text("hit other\n")
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        opened.append(os.fsdecode(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", counting_open)
    answer = grep(tmp_path, "hit")
    assert answer.count("\n") == 20  # 21 lines shown
    assert (opened.count("d"), opened.count("many.txt"), opened.count("other.txt")) == (1, 1, 1)


# -- memory and time, measured in child processes ---------------------------------------

_CHILD = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from toolcards.workspace._grep import grep
    root, pattern = sys.argv[1:3]
    started = time.perf_counter()
    out = grep(Path(root), pattern) if pattern else ""
    print(json.dumps([time.perf_counter() - started, out]))
    """
)

_DRIVER = textwrap.dedent(
    """
    import json, resource, subprocess, sys
    # A fresh process whose only child is the measured one: its RUSAGE_CHILDREN peak is
    # that child's, or ripgrep's if ripgrep (waited for by the child) used more.
    done = subprocess.run([sys.executable, "-c", *sys.argv[1:]], capture_output=True, text=True, check=True)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps([peak_kb, *json.loads(done.stdout)]))
    """
)


def measured(root: Path, pattern: str) -> tuple[float, float, str]:
    """(peak RSS in MB, seconds, output) of one grep in a child process."""
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, _CHILD, str(root), pattern],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    peak_kb, seconds, out = json.loads(done.stdout)
    return peak_kb / 1024, seconds, out


@pytest.fixture(scope="module")
def ten_mb_line(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ten-mb")
    with open(root / "long.txt", "w") as handle:
        handle.write("x" * 5_000_000 + "needle" + "y" * 5_000_000 + "\n")
    return root


@pytest.mark.slow
@pytest.mark.parametrize("pattern", ["needle", "x", "y$"])
def test_a_ten_mb_line_costs_little_memory(ten_mb_line: Path, pattern: str) -> None:
    baseline, _, _ = measured(ten_mb_line, "")
    peak, seconds, out = measured(ten_mb_line, pattern)
    print(f"{pattern!r}: +{peak - baseline:.1f} MB over {baseline:.1f} MB, {seconds * 1000:.0f} ms")
    assert peak - baseline <= 64
    assert seconds < 30
    assert out.startswith("long.txt:1: ")
    assert len(shown_text(out)) <= MAX_GREP_LINE_CHARS + 2


# -- files that are not regular ---------------------------------------------------------


@pytest.fixture
def special_tree(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "real.txt").write_text("hit\n")
    os.mkfifo(tmp_path / "pipe")
    os.mkfifo(tmp_path / "sub" / "pipe.txt")
    server = bound_unix_socket(tmp_path, "sock.txt")
    yield tmp_path
    server.close()


@pytest.mark.parametrize("indexed", ROADS)
def test_fifos_and_sockets_in_the_tree_are_skipped_without_blocking(special_tree: Path, indexed: bool) -> None:
    assert answer_within(30, lambda: search(special_tree, "hit", indexed=indexed)) == "sub/real.txt:1: hit"
    assert answer_within(30, lambda: search(special_tree, "hit", include="*.txt", indexed=indexed)) == (
        "sub/real.txt:1: hit"
    )


@pytest.mark.parametrize("indexed", ROADS)
@pytest.mark.parametrize("path", ["pipe", "sub/pipe.txt", "sock.txt"])
def test_a_fifo_or_socket_as_the_base_path_is_refused(special_tree: Path, indexed: bool, path: str) -> None:
    out = answer_within(30, lambda: search(special_tree, "hit", path, indexed=indexed))
    assert out == (
        f"error: Path {path!r} is not a regular file or a directory (a FIFO, socket or device): "
        "grep searches files only."
    )


@pytest.mark.parametrize("indexed", ROADS)
def test_the_walk_stops_at_its_depth_limit(tmp_path: Path, indexed: bool) -> None:
    deep = tmp_path
    for level in range(MAX_WALK_DEPTH + 5):
        deep = deep / "d"
        deep.mkdir()
        (deep / f"level{level + 2}.txt").write_text("hit\n")
    out = search(tmp_path, "hit", indexed=indexed)
    levels = sorted(int(line.split("/level")[1].split(".")[0]) for line in out.splitlines())
    assert levels == list(range(2, MAX_WALK_DEPTH + 1))


# -- deadlines ---------------------------------------------------------------------------


@pytest.fixture
def many_files(tmp_path: Path) -> Path:
    for index in range(300):
        directory = tmp_path / f"d{index % 10}"
        directory.mkdir(exist_ok=True)
        (directory / f"f{index}.txt").write_text("hit\n" * 20)
    return tmp_path


@pytest.mark.parametrize("indexed", ROADS)
def test_a_passed_deadline_stops_the_search(many_files: Path, indexed: bool) -> None:
    with deadline_after(0.0), pytest.raises(ToolTimeout):
        time.sleep(0.01)
        search(many_files, "hit", indexed=indexed)


def fake_rg_in_bin(tmp_path: Path, script: str) -> str:
    """:func:`fake_rg` in a new ``bin`` directory of ``tmp_path`` (which the search leaves alone)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    return fake_rg(bin_dir, script)


def use_fake_rg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """Make grep run ``script`` as its ripgrep (see :func:`fake_rg_in_bin`)."""
    rg = fake_rg_in_bin(tmp_path, script)
    monkeypatch.setattr(grep_module, "find_rg", lambda: rg)


def fake_rg(tmp_path: Path, script: str) -> str:
    executable = tmp_path / "fake-rg"
    executable.write_text(f"#!/bin/sh\n{script}\n")
    executable.chmod(0o755)
    return str(executable)


def test_ripgrep_is_killed_when_the_deadline_passes(
    many_files: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path_factory.mktemp("bin")
    marker = bin_dir / "pid"
    monkeypatch.setattr(grep_module, "find_rg", lambda: fake_rg(bin_dir, f"echo $$ > {marker}; exec sleep 30"))
    started = time.monotonic()
    with deadline_after(0.5), pytest.raises(ToolTimeout):
        grep(many_files, "hit")
    assert time.monotonic() - started < 5
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


# -- hostile arguments -------------------------------------------------------------------

HOSTILE: list[tuple[str, dict[str, Any]]] = [
    ("pattern of 100,000 '('", {"pattern": "(" * 100_000}),
    ("pattern of 1,001 chars", {"pattern": "a" * 1001}),
    ("300 nested groups", {"pattern": "(" * 300 + "a" + ")" * 300}),
    ("500 nested groups", {"pattern": "(" * 500 + ")" * 500}),
    ("huge repetition", {"pattern": "(a{1000}){1000}"}),
    ("unicode repetition", {"pattern": r"\w{200}x"}),
    ("1,000 chars of *?[", {"pattern": "a", "include": ("*?[" * 334)[:1000]}),
    ("include of 100,000 '{'", {"pattern": "a", "include": "{" * 100_000}),
    ("include '{a,b}' x 1000", {"pattern": "a", "include": "{a,b}" * 1000}),
    ("include '{a,b}' x 200", {"pattern": "a", "include": "{a,b}" * 200}),
    ("include '**/' x 5000", {"pattern": "a", "include": "**/" * 5000}),
    ("include '**/' x 333", {"pattern": "a", "include": "**/" * 333}),
    ("include nested braces", {"pattern": "a", "include": "{a," * 200 + "b" + "}" * 200}),
    ("include stars on a long name", {"pattern": "a", "include": "*a" * 60 + "*b"}),
    # Python's re would backtrack for ages on the 1,000-character line; it is never given this.
    ("300 \\w*", {"pattern": r"\w*" * 300 + "!"}),
    ("300 \\w* after a literal", {"pattern": "aaa" + r"\w*" * 300 + "!"}),
]


@pytest.fixture(scope="module")
def small_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("small")
    (root / ("a" * 200)).write_text("a" * 1000 + "\n")
    deep = root.joinpath(*"abcdefghijkl")
    deep.mkdir(parents=True)
    (deep / "y.txt").write_text("a\n")
    return root


@pytest.mark.parametrize(("label", "arguments"), HOSTILE)
@pytest.mark.parametrize("indexed", ROADS)
def test_hostile_arguments_get_an_answer_at_once(
    small_tree: Path, label: str, arguments: dict[str, Any], indexed: bool
) -> None:
    started = time.perf_counter()
    out = answer_within(30, lambda: search(small_tree, indexed=indexed, **arguments))
    elapsed = (time.perf_counter() - started) * 1000
    print(f"{label}: {elapsed:.1f} ms: {out[:100]!r}")
    assert out.startswith(("error: ", "No matches")) or ":1: " in out
