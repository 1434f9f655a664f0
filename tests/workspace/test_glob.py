"""File search by name pattern."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolcards.errors import RetriableError
from toolcards.workspace._glob import MAX_EXPANSIONS, expand_braces, glob, glob_regex


def make(root: Path, *paths: str) -> Path:
    for index, rel in enumerate(paths):
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(rel)
        # Distinct mtimes in creation order (later = newer) keep the order predictable.
        os.utime(target, ns=(1_000_000_000 * (index + 1),) * 2)
    return root


def found(root: Path, pattern: str, path: str = "") -> set[str]:
    return set(glob(root, pattern, path).splitlines())


# -- braces -----------------------------------------------------------------------------


def test_braces_expand_in_order_and_nest() -> None:
    assert expand_braces("*.{py,ts}") == ["*.py", "*.ts"]
    assert expand_braces("*.{py,{ts,tsx}}") == ["*.py", "*.ts", "*.tsx"]
    assert expand_braces("{src,lib}/*.{a,b}") == ["src/*.a", "src/*.b", "lib/*.a", "lib/*.b"]
    assert expand_braces("{a,a}") == ["a"]
    assert expand_braces("x{,s}") == ["x", "xs"]


def test_braces_without_comma_or_unbalanced_stay_literal() -> None:
    assert expand_braces("{a}") == ["{a}"]
    assert expand_braces("{a,b") == ["{a,b"]
    assert expand_braces("a}b,{c,d}") == ["a}b,c", "a}b,d"]


def test_brace_explosions_are_refused() -> None:
    with pytest.raises(RetriableError, match=str(MAX_EXPANSIONS)):
        expand_braces("{a,b,c,d}" * 6)


# -- matching ---------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make(
        tmp_path / "ws",
        "top.py",
        "setup.cfg",
        "src/a.py",
        "src/pkg/b.py",
        "src/pkg/deep/c.PY",
        "src/web/app.ts",
        "src/web/app.tsx",
        "docs/index.md",
        ".hidden.py",
        ".git/hooks/x.py",
    )


def test_double_star_matches_any_depth_including_none(tree: Path) -> None:
    assert found(tree, "**/*.py") == {"top.py", ".hidden.py", "src/a.py", "src/pkg/b.py", "src/pkg/deep/c.PY"}
    assert found(tree, "src/**/*.py") == {"src/a.py", "src/pkg/b.py", "src/pkg/deep/c.PY"}
    assert found(tree, "src/**/deep/*") == {"src/pkg/deep/c.PY"}


def test_a_trailing_double_star_matches_everything_below(tree: Path) -> None:
    assert found(tree, "src/web/**") == {"src/web/app.ts", "src/web/app.tsx"}


def test_single_star_stays_in_one_segment(tree: Path) -> None:
    assert found(tree, "*.py") == {"top.py", ".hidden.py"}
    assert found(tree, "src/*.py") == {"src/a.py"}
    assert found(tree, "*/*.py") == {"src/a.py"}


def test_question_mark_and_classes(tree: Path) -> None:
    assert found(tree, "src/?.py") == {"src/a.py"}
    assert found(tree, "src/[ab].py") == {"src/a.py"}
    assert glob(tree, "src/[!a].py").startswith("No files match")
    assert found(tree, "src/pkg/[!a].py") == {"src/pkg/b.py"}
    assert found(tree, "src/pkg/[a-c].py") == {"src/pkg/b.py"}
    assert found(tree, "src/pkg/[^c].py") == {"src/pkg/b.py"}


def test_braces_in_patterns(tree: Path) -> None:
    assert found(tree, "src/web/*.{ts,tsx}") == {"src/web/app.ts", "src/web/app.tsx"}
    assert found(tree, "**/*.{md,{cfg,ts}}") == {"docs/index.md", "setup.cfg", "src/web/app.ts"}


def test_matching_is_case_insensitive(tree: Path) -> None:
    assert found(tree, "SRC/PKG/DEEP/*.py") == {"src/pkg/deep/c.PY"}


def test_git_internals_are_not_walked(tree: Path) -> None:
    assert not any(p.startswith(".git/") for p in found(tree, "**"))


def test_a_base_path_narrows_and_results_stay_root_relative(tree: Path) -> None:
    assert found(tree, "*.py", "src/pkg") == {"src/pkg/b.py"}
    assert found(tree, "**/*.py", "src/pkg") == {"src/pkg/b.py", "src/pkg/deep/c.PY"}


def test_newest_first_then_path_for_ties(tmp_path: Path) -> None:
    root = make(tmp_path, "old.txt", "mid.txt", "new.txt")
    assert glob(root, "*.txt").splitlines() == ["new.txt", "mid.txt", "old.txt"]
    for name in ("b.txt", "a.txt", "c/a.txt"):
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text("")
        os.utime(root / name, ns=(9_000_000_000,) * 2)
    assert glob(root, "**/*.txt").splitlines()[:3] == ["a.txt", "b.txt", "c/a.txt"]


def test_results_are_capped_with_the_total(tmp_path: Path) -> None:
    root = make(tmp_path, *(f"f{i:03}.txt" for i in range(130)))
    lines = glob(root, "*.txt").splitlines()
    assert len(lines) == 101
    assert lines[0] == "f129.txt"
    assert lines[-1] == "30 more — next offset 100"


def test_no_match_says_so_and_suggests_double_star(tree: Path) -> None:
    assert glob(tree, "*.ts") == (
        "No files match '*.ts' under '.'. Patterns are anchored at the base directory: "
        "use '**/*.ts' to match at any depth."
    )
    assert glob(tree, "**/*.rs") == "No files match '**/*.rs' under '.'."


def test_an_exclusion_that_leaves_out_every_match_says_how_many_it_left_out(tmp_path: Path) -> None:
    root = make(tmp_path, "src/a.py", "src/b.py", "tests/test_a.py", "notes.txt")
    assert glob(root, "**/*.py", exclude="{src,test_*}") == (
        "3 files match '**/*.py' under '.', but exclude '{src,test_*}' leaves all of them out. "
        "Change or drop exclude to list them."
    )
    assert glob(root, "**/*.txt", exclude="notes.txt") == (
        "1 file matches '**/*.txt' under '.', but exclude 'notes.txt' leaves it out. Change or drop exclude to list it."
    )
    assert glob(root, "**/*.rs", exclude="src") == "No files match '**/*.rs' under '.'."


def test_symlinked_directories_are_not_followed(tree: Path, tmp_path: Path) -> None:
    outside = make(tmp_path / "outside", "secret.py")
    (tree / "link").symlink_to(outside)
    assert not any("secret" in p for p in found(tree, "**/*.py"))
    assert "link" in found(tree, "*")


@pytest.mark.parametrize("pattern", ["../*.py", "/etc/*", "src/../../x", "**/../*", "{a,../b}", "a\x00"])
def test_escaping_patterns_are_refused(tree: Path, pattern: str) -> None:
    with pytest.raises(RetriableError, match="path escapes the workspace root"):
        glob(tree, pattern)


def test_bad_base_paths_are_refused(tree: Path) -> None:
    with pytest.raises(RetriableError, match="path escapes the workspace root"):
        glob(tree, "*", "..")
    with pytest.raises(RetriableError, match="is a file"):
        glob(tree, "*", "top.py")
    with pytest.raises(RetriableError, match="does not exist"):
        glob(tree, "*", "nope")
    with pytest.raises(RetriableError, match="empty"):
        glob(tree, " ")


def test_glob_regex_is_one_anchored_expression() -> None:
    regex = glob_regex(["**/*.py", "docs/*.md"])
    assert regex.fullmatch("a/b/c.py")
    assert regex.fullmatch("docs/x.md")
    assert not regex.fullmatch("docs/sub/x.md")
    assert not regex.fullmatch("a.pyc")


def test_undecodable_names_are_shown_as_valid_text(tmp_path: Path) -> None:
    with open(bytes(tmp_path) + b"/caf\xe9.txt", "wb"):
        pass
    assert glob(tmp_path, "*.txt") == "caf\ufffd.txt"
