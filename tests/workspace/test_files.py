"""Numbered reads and directory listings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolcards.errors import RetriableError
from toolcards.workspace import _files as files
from toolcards.workspace._files import (
    MAX_LINE_CHARS,
    list_directory,
    page_of_text,
    read_bytes,
    read_page,
    render_page,
)
from toolcards.workspace._tree import Tree

# -- read_page and render_page ----------------------------------------------------------


def read_numbered(path: Path, offset: int = 1, limit: int = 2000) -> str:
    """The page a model reads of the file at ``path``, as ``workspace_read`` renders it."""
    with Tree(path.parent).open_file(path.name) as file:
        return render_page(read_page(file, offset, limit).page, shown_as=file.rel)


def test_lines_are_numbered_like_cat_n(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("first\n\tindented\nlast")
    assert read_numbered(tmp_path / "a.txt") == "1\tfirst\n2\t\tindented\n3\tlast"


def test_a_cut_page_says_the_total_and_the_next_offset(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 26)))
    page = read_numbered(tmp_path / "long.txt", offset=11, limit=10).splitlines()
    assert page[0] == "11\tline 11"
    assert page[9] == "20\tline 20"
    assert page[10] == "(showing lines 11-20 of 25; read again with offset=21 to continue)"
    last = read_numbered(tmp_path / "long.txt", offset=21, limit=10).splitlines()
    assert last[-1] == "25\tline 25"


def test_the_default_page_is_2000_lines(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x\n" * 2500)
    page = read_numbered(tmp_path / "big.txt").splitlines()
    assert len(page) == 2001
    assert "offset=2001" in page[-1]
    assert "of 2500" in page[-1]


def test_crlf_and_bom_are_not_shown(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    assert read_numbered(tmp_path / "w.txt") == "1\tone\n2\ttwo"


def test_long_lines_are_clipped_with_a_marker(tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("a" * (MAX_LINE_CHARS + 500) + "\nshort\n")
    first, second = read_numbered(tmp_path / "min.js").splitlines()
    assert first == f"1\t{'a' * MAX_LINE_CHARS}… [line clipped: 500 more characters]"
    assert second == "2\tshort"


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\x00", b"caf\xe9\n", b"text\x00more"])
def test_binary_content_is_retriable_with_hints(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "x.bin").write_bytes(content)
    with pytest.raises(RetriableError) as info:
        read_numbered(tmp_path / "x.bin")
    message = str(info.value)
    assert "'x.bin' looks binary" in message
    assert "workspace_view" in message
    assert "converted" in message


def test_a_directory_hints_at_listing(tmp_path: Path) -> None:
    with pytest.raises(RetriableError, match="workspace_list"):
        read_numbered(tmp_path)


def test_a_missing_file_hints_at_glob(tmp_path: Path) -> None:
    with pytest.raises(RetriableError) as info:
        read_numbered(tmp_path / "nope.py")
    assert "'nope.py' does not exist" in str(info.value)
    assert "workspace_glob" in str(info.value)


def test_an_offset_past_the_end_gives_the_line_count(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1\n2\n3\n")
    with pytest.raises(RetriableError, match="has 3 lines"):
        read_numbered(tmp_path / "a.txt", offset=4)
    with pytest.raises(RetriableError, match="at least 1"):
        read_numbered(tmp_path / "a.txt", offset=0)
    with pytest.raises(RetriableError, match="at least 1"):
        read_numbered(tmp_path / "a.txt", limit=0)


def test_an_empty_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_text("")
    assert read_numbered(tmp_path / "e.txt") == "(empty file)"


def test_a_page_of_text_that_is_not_a_file_is_numbered_the_same_way() -> None:
    assert render_page(page_of_text("# Title\n\nbody\n", offset=3)) == "3\tbody"


CONTENTS = [
    b"",
    b"no newline at the end",
    b"\xef\xbb\xbfbom, then\r\ncrlf\r\n",
    "é\u2028ü\n".encode() * 300,
    b"x" * (MAX_LINE_CHARS + 7) + b"\nshort\n" * 20,
    b"".join(b"line %d\n" % n for n in range(1, 3000)),
    b"caf\xe9\n",
    b"nul \x00 inside\n",
]


@pytest.mark.parametrize("content", CONTENTS)
@pytest.mark.parametrize(
    ("offset", "limit", "max_chars"), [(1, 2000, None), (3, 5, None), (1, 2000, 150), (2990, 20, None)]
)
def test_a_small_file_read_whole_pages_like_one_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes, offset: int, limit: int, max_chars: int | None
) -> None:
    (tmp_path / "f.txt").write_bytes(content)

    def read(whole_below: int) -> object:
        monkeypatch.setattr(files, "READ_CHUNK_BYTES", whole_below)
        try:
            with Tree(tmp_path).open_file("f.txt") as file:
                return read_page(file, offset, limit, max_chars=max_chars)
        except RetriableError as refused:
            return str(refused)

    whole, streamed = read(1 << 20), read(0)
    assert whole == streamed
    assert isinstance(whole, str) or (whole.data, whole.page.offset) == (content, offset)  # type: ignore[attr-defined]


def test_a_small_file_is_read_in_one_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "f.txt").write_text("x" * 63 + "\n" * 32)
    reads: list[int] = []
    real_read = os.read

    def counted(fd: int, size: int) -> bytes:
        reads.append(size)
        return real_read(fd, size)

    monkeypatch.setattr(os, "read", counted)
    assert read_numbered(tmp_path / "f.txt").startswith("1\tx")
    assert len(reads) == 1  # the end is known from the size, without a read returning nothing


def test_a_small_file_that_grows_while_it_is_read_is_reported(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("one\n")
    with Tree(tmp_path).open_file("f.txt") as file:
        with (tmp_path / "f.txt").open("a") as appending:  # in place, as a command appends
            appending.write("two\n" * 1000)
        with pytest.raises(RetriableError, match=r"'f\.txt' changed while it was being read"):
            read_page(file)


def test_line_numbers_past_the_ones_kept_are_formatted_the_same_way() -> None:
    text = "".join(f"{n}\n" for n in range(1, 20_011))
    page = page_of_text(text, offset=9_990, limit=20)
    assert page.lines == [f"{n}\t{n}" for n in range(9_990, 10_010)]
    assert page_of_text(text, offset=20_001, limit=10).lines == [f"{n}\t{n}" for n in range(20_001, 20_011)]


def test_read_bytes_hints_like_a_page_read(tmp_path: Path) -> None:
    with pytest.raises(RetriableError, match="workspace_glob"):
        read_bytes(tmp_path / "missing")
    with pytest.raises(RetriableError, match="workspace_list"):
        read_bytes(tmp_path)


# -- list_directory ---------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel in ["src/pkg/mod.py", "src/main.py", "docs/Guide.md", "README.md", "b.txt", ".env", ".git/HEAD"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    (root / "zeta").mkdir()
    return root


def test_flat_listing_puts_directories_first_then_files_alphabetically(tree: Path) -> None:
    assert list_directory(Tree(tree)).splitlines() == [
        ".git/ (skipped)",
        "docs/",
        "src/",
        "zeta/",
        ".env",
        "b.txt",
        "README.md",
    ]


def test_a_tree_by_depth(tree: Path) -> None:
    assert list_directory(Tree(tree), depth=2) == "\n".join(
        [
            "./",
            "├── .git/ (skipped)",
            "├── docs/",
            "│   └── Guide.md",
            "├── src/",
            "│   ├── pkg/",
            "│   └── main.py",
            "├── zeta/",
            "├── .env",
            "├── b.txt",
            "└── README.md",
        ]
    )


def test_depth_zero_lists_every_level_but_not_git_internals(tree: Path) -> None:
    listing = list_directory(Tree(tree), depth=0)
    assert "│   │   └── mod.py" in listing
    assert "HEAD" not in listing


def test_listing_a_subdirectory(tree: Path) -> None:
    assert list_directory(Tree(tree), "src") == "pkg/\nmain.py"
    assert list_directory(Tree(tree), "src", depth=0).splitlines()[0] == "src/"


def test_symlinks_are_marked_and_not_followed(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("no")
    (tree / "out").symlink_to(outside)
    listing = list_directory(Tree(tree), depth=0)
    assert "out@" in listing
    assert "secret.txt" not in listing


def test_listing_is_capped_with_a_notice(tmp_path: Path) -> None:
    for i in range(600):
        (tmp_path / f"f{i:03}.txt").write_text("")
    lines = list_directory(Tree(tmp_path)).splitlines()
    assert len(lines) == 501
    assert lines[499] == "f499.txt"
    assert lines[500] == "100 more — next offset 500"


def test_a_long_mixed_listing_keeps_the_order_and_marks_each_kind(tmp_path: Path) -> None:
    # A block of regular files (all of Dir) is read and labelled in one pass; a block with a
    # directory, a link, a pipe or a name that is not ASCII (the root) entry by entry. Either
    # way: directories first, then case-blind, names that differ only in case by name.
    names = [f"f{i:03}.txt" for i in range(300)]
    (tmp_path / "Dir").mkdir()
    for name in names:
        (tmp_path / "Dir" / name).write_text("")
    for name in ["b", "B", "Ä.txt"]:
        (tmp_path / name).write_text("")
    (tmp_path / "lnk").symlink_to("b")
    os.mkfifo(tmp_path / "pipe")
    assert list_directory(Tree(tmp_path), depth=0, limit=1000).splitlines() == [
        "./",
        "├── Dir/",
        *(f"│   ├── {name}" for name in names[:-1]),
        f"│   └── {names[-1]}",
        "├── B",
        "├── b",
        "├── lnk@",
        "├── pipe (named pipe)",
        "└── Ä.txt",
    ]
    assert list_directory(Tree(tmp_path)).splitlines() == ["Dir/", "B", "b", "lnk@", "pipe (named pipe)", "Ä.txt"]
    assert list_directory(Tree(tmp_path), "Dir", offset=250, limit=5).splitlines() == [
        *names[250:255],
        "45 more — next offset 255",
    ]


def test_an_empty_directory_says_so(tmp_path: Path) -> None:
    assert list_directory(Tree(tmp_path)) == "(empty directory)"
    assert list_directory(Tree(tmp_path), depth=2) == "./\n(empty directory)"


def test_listing_refuses_bad_paths(tree: Path) -> None:
    with pytest.raises(RetriableError, match="path escapes the workspace root"):
        list_directory(Tree(tree), "..")
    with pytest.raises(RetriableError, match="is a file"):
        list_directory(Tree(tree), "README.md")
    with pytest.raises(RetriableError, match="does not exist"):
        list_directory(Tree(tree), "nope")
    with pytest.raises(RetriableError, match="depth"):
        list_directory(Tree(tree), depth=-1)
