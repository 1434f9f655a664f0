"""Paging, sizes and exclusions of ``workspace_list`` and ``workspace_glob``: every entry is reachable."""

from __future__ import annotations

import os
import re

import pytest

from tests.workspace.hostile import CheckedAgent
from tests.workspace.test_journal import plain
from toolcards.workspace._tree import MAX_SCAN_ENTRIES

NEXT = re.compile(r"^([\d,]+) more — next offset (\d+)$")


def pages(a: CheckedAgent, tool: str, **args: object) -> list[str]:
    """Every entry, page after page, following each answer's last line."""
    seen: list[str] = []
    offset = 0
    while True:
        lines = plain(a(tool, offset=offset, **args)).split("\n")
        found = NEXT.match(lines[-1])
        if found is None:
            return seen + lines
        seen += lines[:-1]
        assert int(found.group(2)) == len(seen)
        offset = int(found.group(2))


def test_a_directory_of_1200_entries_is_listed_whole_page_by_page(a: CheckedAgent) -> None:
    for index in range(1200):
        (a.root / f"file{index:04}.txt").write_text("")
    first = plain(a("workspace_list")).split("\n")
    assert len(first) == 501 and first[-1] == "700 more — next offset 500"
    assert pages(a, "workspace_list", limit=400) == [f"file{index:04}.txt" for index in range(1200)]


def test_a_tree_listing_pages_too(a: CheckedAgent) -> None:
    for name in ("a/1.txt", "a/2.txt", "b/3.txt"):
        (a.root / name).parent.mkdir(exist_ok=True)
        (a.root / name).write_text("")
    assert plain(a("workspace_list", depth=0, limit=3)).split("\n") == [
        "./",
        "├── a/",
        "│   ├── 1.txt",
        "│   └── 2.txt",
        "2 more — next offset 3",
    ]
    assert plain(a("workspace_list", depth=0, offset=3)).split("\n") == ["./", "└── b/", "    └── 3.txt"]


def test_glob_pages_past_its_first_hundred_newest_first(a: CheckedAgent) -> None:
    for index in range(250):
        target = a.root / "logs" / f"{index:03}.log"
        target.parent.mkdir(exist_ok=True)
        target.write_text("")
        os.utime(target, ns=(1_000_000_000 * (index + 1),) * 2)
    first = plain(a("workspace_glob", pattern="**/*.log")).split("\n")
    assert len(first) == 101 and first[-1] == "150 more — next offset 100"
    assert pages(a, "workspace_glob", pattern="**/*.log", limit=90) == [
        f"logs/{index:03}.log" for index in reversed(range(250))
    ]


def test_sizes_on_request(a: CheckedAgent) -> None:
    (a.root / "small.txt").write_text("x" * 10)
    (a.root / "big.bin").write_bytes(b"x" * 3000)
    (a.root / "dir").mkdir()
    assert plain(a("workspace_list", sizes=True)).split("\n") == ["dir/", "big.bin (2.9 KB)", "small.txt (10 bytes)"]
    assert plain(a("workspace_list")).split("\n") == ["dir/", "big.bin", "small.txt"]
    assert set(plain(a("workspace_glob", pattern="*", sizes=True)).split("\n")) == {
        "big.bin (2.9 KB)",
        "small.txt (10 bytes)",
    }


def test_exclude_leaves_out_names_at_any_depth_and_anchored_paths(a: CheckedAgent) -> None:
    for name in ("src/app.py", "src/app.pyc", "node_modules/lib/index.js", "build/out.js", "src/build/keep.js"):
        (a.root / name).parent.mkdir(parents=True, exist_ok=True)
        (a.root / name).write_text("")
    assert set(plain(a("workspace_glob", pattern="**/*", exclude="{node_modules,*.pyc}")).split("\n")) == {
        "src/app.py",
        "build/out.js",
        "src/build/keep.js",
    }
    # With a slash, a pattern is a path from the base directory: only the top build/ goes.
    assert set(plain(a("workspace_glob", pattern="**/*.js", exclude="build/**")).split("\n")) == {
        "node_modules/lib/index.js",
        "src/build/keep.js",
    }
    assert plain(a("workspace_list", depth=0, exclude="{node_modules,build,*.pyc}")).split("\n") == [
        "./",
        "└── src/",
        "    └── app.py",
    ]
    assert plain(a("workspace_list", exclude="*")) == "(empty directory)"


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("workspace_list", {"offset": 5}, "offset 5 is past the end: the listing has 2 entries."),
        ("workspace_glob", {"pattern": "*", "offset": 2}, "offset 2 is past the end: 2 files match."),
        ("workspace_list", {"offset": -1}, "greater than or equal to 0"),
        ("workspace_glob", {"pattern": "*", "limit": 0}, "greater than or equal to 1"),
        ("workspace_list", {"limit": 10_001}, "less than or equal to 10000"),
        ("workspace_glob", {"pattern": "*", "exclude": "../x"}, "path escapes the workspace root"),
        ("workspace_list", {"exclude": "{a," * 20 + "b" + "}" * 20}, "nests braces more than"),
    ],
)
def test_bad_pages_and_exclusions_are_refused_in_words(
    a: CheckedAgent, tool: str, args: dict[str, object], expected: str
) -> None:
    (a.root / "one.txt").write_text("")
    (a.root / "two.txt").write_text("")
    _, message = a.attempt(tool, **args)
    assert message is not None and expected in message


def test_a_huge_directory_says_so_and_still_ends_with_the_next_offset(a: CheckedAgent) -> None:
    huge = a.root / "huge"
    huge.mkdir()
    for index in range(MAX_SCAN_ENTRIES + 5):
        (huge / f"{index:05}").touch()
    lines = plain(a("workspace_list", path="huge", limit=10)).split("\n")
    assert lines[-2].startswith(f"('huge' has more than {MAX_SCAN_ENTRIES:,} entries: only some are listed")
    assert lines[-1] == f"{MAX_SCAN_ENTRIES - 10:,} more — next offset 10"


def test_a_tree_page_that_starts_inside_a_folder_first_shows_the_folders_it_is_in(a: CheckedAgent) -> None:
    for name in ("big/sub/deep/d0.py", "big/sub/s0.py", "big/sub/s1.py", "big/sub/s2.py", "big/g0.py", "big/g1.py"):
        (a.root / name).parent.mkdir(parents=True, exist_ok=True)
        (a.root / name).write_text("")
    assert plain(a("workspace_list", path="big", depth=0, offset=1, limit=3)).split("\n") == [
        "big/",
        "├── sub/ (continued)",
        "│   ├── deep/",
        "│   │   └── d0.py",
        "│   ├── s0.py",
        "4 more — next offset 4",
    ]
    assert plain(a("workspace_list", path="big", depth=0, offset=2, limit=3)).split("\n") == [
        "big/",
        "├── sub/ (continued)",
        "│   ├── deep/ (continued)",
        "│   │   └── d0.py",
        "│   ├── s0.py",
        "│   ├── s1.py",
        "3 more — next offset 5",
    ]
    whole = plain(a("workspace_list", path="big", depth=0)).split("\n")[1:]
    for limit in (1, 2, 3):
        entries: list[str] = []
        while True:
            lines = plain(a("workspace_list", path="big", depth=0, offset=len(entries), limit=limit)).split("\n")
            found = NEXT.match(lines[-1])
            entries += [line for line in lines[1 : -1 if found else None] if not line.endswith(" (continued)")]
            if found is None:
                break
            assert int(found.group(2)) == len(entries)
        assert entries == whole


def test_one_line_and_one_byte_are_said_in_the_singular(a: CheckedAgent) -> None:
    (a.root / "one.txt").write_text("x")
    assert "exists with 1 line. " in a.refused(
        "workspace_patch", patch_text="--- /dev/null\n+++ b/one.txt\n@@ -0,0 +1 @@\n+y\n"
    )
    assert "'one.txt' has 1 line. " in a.refused("workspace_read", path="one.txt", offset=5)
    assert "size: 1 byte\n" in plain(a("workspace_info", path="one.txt")) + "\n"
    assert a.refused("workspace_list", offset=3) == "offset 3 is past the end: the listing has 1 entry."
    assert a.refused("workspace_glob", pattern="*", offset=3) == "offset 3 is past the end: 1 file matches."
    assert "one.txt (1 byte)" in a("workspace_list", sizes=True)
