"""Glob patterns are refused past their limits or matched in linear time, and the walk is bounded.

The brace parser and the matcher are checked against simple reference implementations
(the recursive expansion and the backtracking translation they replaced) on generated
patterns, so being linear changed no answer.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.workspace.hostile import answer_within, bound_unix_socket
from toolcards.core._deadline import deadline_after
from toolcards.errors import RetriableError, ToolTimeout
from toolcards.workspace._glob import (
    MAX_BRACE_DEPTH,
    MAX_EXPANDED_CHARS,
    MAX_EXPANSIONS,
    MAX_GLOB_CHARS,
    MAX_WALK_DEPTH,
    expand_braces,
    glob,
    glob_regex,
)

# -- reference implementations -----------------------------------------------------------


def reference_expand(pattern: str) -> list[str]:
    """The quadratic recursive expansion: leftmost group first, re-scanning each result."""
    out: list[str] = []

    def expand(text: str) -> None:
        start = 0
        while (i := text.find("{", start)) >= 0:
            depth, commas, close = 0, [], -1
            for j in range(i, len(text)):
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        close = j
                        break
                elif text[j] == "," and depth == 1:
                    commas.append(j)
            if close < 0 or not commas:
                start = i + 1
                continue
            bounds = [i, *commas, close]
            for k in range(len(bounds) - 1):
                expand(text[:i] + text[bounds[k] + 1 : bounds[k + 1]] + text[close + 1 :])
            return
        out.append(text)

    expand(pattern)
    return list(dict.fromkeys(out))


def reference_regex(pattern: str) -> re.Pattern[str]:
    """The backtracking translation: ``*`` is ``[^/]*``, a ``**`` segment ``(?:[^/]*/)*``."""
    segments = [s for s in pattern.split("/") if s not in ("", ".")] or [""]
    parts = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]*/)*")
        else:
            parts.append(reference_segment(segment) + ("" if last else "/"))
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def reference_segment(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            j = i + 1
            negate = segment[j : j + 1] in ("!", "^") and j < len(segment)
            first = j = j + 1 if negate else j
            j = j + 1 if segment[j : j + 1] == "]" else j
            close = segment.find("]", j)
            if close >= 0:
                members = "".join("-" if c == "-" else re.escape(c) for c in segment[first:close])
                out.append(f"[^/{members}]" if negate else f"[{members}]")
                i = close + 1
                continue
            out.append(re.escape(char))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab,{}", max_size=14))
def test_brace_expansion_matches_the_recursive_reference(pattern: str) -> None:
    assert expand_braces(pattern) == reference_expand(pattern)


_SEGMENT = st.lists(st.sampled_from(["a", "b", "*", "?", "[ab]", "[!a]", "**"]), min_size=1, max_size=4).map("".join)
_PATTERN = st.lists(st.one_of(st.just("**"), _SEGMENT), min_size=1, max_size=4).map("/".join)
_PATH = st.lists(st.text(alphabet="ab", min_size=1, max_size=4), min_size=1, max_size=5).map("/".join)


@settings(max_examples=400, deadline=None)
@given(_PATTERN, st.lists(_PATH, min_size=1, max_size=10))
def test_linear_matching_agrees_with_the_backtracking_reference(pattern: str, paths: list[str]) -> None:
    linear, reference = glob_regex([pattern]), reference_regex(pattern)
    for path in paths:
        assert bool(linear.fullmatch(path)) == bool(reference.fullmatch(path)), (pattern, path)


def test_an_earlier_segment_that_only_starts_like_the_pattern_is_not_taken() -> None:
    # The run between two ** commits to its earliest place only where a whole segment matches.
    assert glob_regex(["a/**/b/**/c"]).fullmatch("a/bb/b/c")
    assert glob_regex(["**/x*y/**/z"]).fullmatch("xy1/xay/q/z")


# -- limits -------------------------------------------------------------------------------


def test_limits_are_refused_with_the_limit_in_the_message() -> None:
    with pytest.raises(RetriableError, match=f"at most {MAX_GLOB_CHARS:,} are accepted"):
        expand_braces("a" * (MAX_GLOB_CHARS + 1))

    def nested(depth: int) -> str:
        return "".join(f"{{{chr(ord('a') + n)}," for n in range(depth)) + "z" + "}" * depth

    with pytest.raises(RetriableError, match=f"more than {MAX_BRACE_DEPTH} deep"):
        expand_braces(nested(MAX_BRACE_DEPTH + 1))
    assert len(expand_braces(nested(MAX_BRACE_DEPTH))) == MAX_BRACE_DEPTH + 1
    with pytest.raises(RetriableError, match=f"more than {MAX_EXPANSIONS} alternatives"):
        expand_braces("{a,b}" * 10)
    assert len(expand_braces("{a,b}" * 9)) == 512
    with pytest.raises(RetriableError, match=f"more than {MAX_EXPANDED_CHARS:,} characters"):
        expand_braces("{" + ",".join(f"{n:03}" for n in range(100)) + "}" + "x" * 300)


def test_a_long_pattern_is_not_repeated_whole_in_the_message() -> None:
    with pytest.raises(RetriableError) as info:
        expand_braces("{a,b}" * 199 + "{c,d}")
    assert len(str(info.value)) < 300
    assert "(1,000 characters)" in str(info.value)


def test_a_backward_range_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RetriableError, match=r"invalid character class .* \[a-z\]"):
        glob(tmp_path, "[z-a].txt")


# -- hostile patterns ---------------------------------------------------------------------

HOSTILE = {
    "'{' x 100,000": "{" * 100_000,
    "'{a,b}' x 1000": "{a,b}" * 1000,
    "'**/' x 5000": "**/" * 5000,
    "1,000 chars of *?[": ("*?[" * 334)[:1000],
    "'{' x 1000": "{" * 1000,
    "'{a,b}' x 200": "{a,b}" * 200,
    "'**/' x 333": "**/" * 333,
    "'**/a/' x 199 on a deep tree": ("**/a/" * 199) + "z.py",
    # A matcher that lets each ** backtrack (wcmatch's, for one) takes ~1.7 s per file here
    # at 6 of them, about ten times more for each one added.
    "'**/a/' x 8 on a deep tree": ("**/a/" * 8) + "z.py",
    "200 nested braces": "{a," * 200 + "b" + "}" * 200,
    "stars on a long name": "**/" + "*a" * 60 + "*b",
    "classes on a long name": "**/" + "*[ab]" * 80 + "*c",
}


@pytest.fixture(scope="module")
def hostile_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    (root / ("a" * 250)).write_text("")
    deep = root.joinpath(*["a"] * 40)
    deep.mkdir(parents=True)
    (deep / "y.py").write_text("")
    return root


@pytest.mark.parametrize("pattern", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_patterns_get_an_answer_at_once(hostile_tree: Path, pattern: str) -> None:
    out = answer_within(30, lambda: glob(hostile_tree, pattern))
    assert out.startswith(("error: ", "No files match")) or "y.py" in out or "aaaa" in out


# -- the walk -----------------------------------------------------------------------------


@pytest.fixture
def special_tree(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "real.txt").write_text("x\n")
    os.mkfifo(tmp_path / "pipe.txt")
    os.mkfifo(tmp_path / "sub" / "pipe.txt")
    (tmp_path / "link.txt").symlink_to(tmp_path / "sub" / "real.txt")
    server = bound_unix_socket(tmp_path, "sock.txt")
    yield tmp_path
    server.close()


def test_fifos_and_sockets_are_not_listed_and_never_block(special_tree: Path) -> None:
    out = answer_within(30, lambda: glob(special_tree, "**/*.txt"))
    assert set(out.splitlines()) == {"sub/real.txt", "link.txt"}


def test_the_walk_stops_at_its_depth_limit(tmp_path: Path) -> None:
    deep = tmp_path
    for _ in range(MAX_WALK_DEPTH + 5):
        deep = deep / "d"
        deep.mkdir()
        (deep / "f.txt").write_text("")
    depths = sorted(line.count("/") + 1 for line in glob(tmp_path, "**/f.txt").splitlines())
    assert depths == list(range(2, MAX_WALK_DEPTH + 1))


def test_many_matches_keep_only_the_newest_in_memory_and_count_the_rest(tmp_path: Path) -> None:
    for index in range(2500):
        target = tmp_path / f"d{index % 7}" / f"f{index:04}.txt"
        target.parent.mkdir(exist_ok=True)
        target.write_text("")
        os.utime(target, ns=(1_000_000_000 * (index + 1),) * 2)
    lines = glob(tmp_path, "**/*.txt").splitlines()
    assert lines[0] == f"d{2499 % 7}/f2499.txt"
    assert lines[99] == f"d{2400 % 7}/f2400.txt"
    assert lines[100] == "2,400 more — next offset 100"
    # Paging on keeps only offset + limit matches in memory, and meets the same order.
    lines = glob(tmp_path, "**/*.txt", offset=2400, limit=150).splitlines()
    assert lines[0] == f"d{99 % 7}/f0099.txt" and lines[-1] == f"d{0}/f0000.txt" and len(lines) == 100


def test_a_passed_deadline_stops_the_walk(tmp_path: Path) -> None:
    for index in range(50):
        (tmp_path / f"d{index}").mkdir()
    with deadline_after(0.0), pytest.raises(ToolTimeout):
        time.sleep(0.01)
        glob(tmp_path, "**/*")
