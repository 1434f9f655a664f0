"""Benchmark of the workspace index: ``workspace_grep`` beside ripgrep, and ``workspace_search``.

One run, on temporary trees:

* the peer benchmark's tree (10,000 source files of about 1 KB, ``bench/peer/fixtures.py``),
  its files dated an hour back (a checkout's files are older than the index's
  :data:`~toolcards.workspace._index.RACY_S`): the index built in the background (wall time,
  target <= 10 s) and its size against the text it indexes (target <= 0.5x); then grep
  through the index and by ripgrep alone, same call, same answer (checked):

  - a literal (``handler_4321_7``, one file): target <= 10 ms;
  - a regex with a literal (``def handler_5\\d\\d_3\\b``, the peer's pattern): <= 20 ms;
  - after one file was changed through the workspace (the index told at once): <= 15 ms;
  - after one file was changed as a shell would (seen by inotify, or the stat walk where
    inotify is not used, both measured): <= 30 ms;

* ``workspace_search`` over 50,000 chunks (5,000 files of 300 lines), embeddings from the
  ``hashing`` provider so the query costs nothing to embed: target <= 20 ms; the local
  model's query embedding is timed apart; and the time to take in one edited file (index
  refresh and new chunks): target <= 50 ms;

* search quality on the labelled standard-library corpus (``bench/_search_queries.py``):
  recall@8 and MRR of the fusion, BM25 alone and the local model alone (skipped without it).

Nothing is asserted: the machine is noisy.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench._search_queries import build_corpus
from bench.peer.fixtures import GREP_PATTERN, build_tree
from bench.timing import Case, Skip, measure
from toolcards.vector import EmbeddingParam, get_embedding_service
from toolcards.workspace._file_search import FileSearch, Hit
from toolcards.workspace._grep import find_rg, grep
from toolcards.workspace._index import WorkspaceIndex

__all__ = ["run"]

_OLD = time.time() - 3600
LITERAL = "handler_4321_7"


def _age(root: Path) -> None:
    for directory, _, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(directory, name), (_OLD, _OLD))


def run() -> list[Case]:
    if find_rg() is None:
        raise Skip("ripgrep is not installed")
    cases: list[Case] = []
    base = Path(tempfile.mkdtemp(prefix="bench-search-"))
    try:
        cases += _grep_cases(base / "grep")
        cases += _search_cases(base / "search")
        cases += _quality_cases(base / "quality")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return cases


def _grep_cases(root: Path) -> list[Case]:
    root.mkdir()
    build_tree(root, 10_000)
    _age(root)
    cases = []
    index = WorkspaceIndex(root)
    started = time.perf_counter()
    index.wait_ready()
    build_s = time.perf_counter() - started
    status = index.status()
    cases.append(Case("index build, 10,000 files", build_s * 1000, "background thread, wall time", target=10_000))
    cases.append(
        Case(
            "index size / text indexed",
            status.index_bytes / status.text_bytes,
            f"{status.index_bytes / 1e6:.2f} MB for {status.text_bytes / 1e6:.1f} MB",
            unit="x",
            target=0.5,
        )
    )
    for label, pattern, target in (("literal", LITERAL, 10.0), ("regex", GREP_PATTERN, 20.0)):
        assert grep(root, pattern, index=index) == grep(root, pattern)
        ripgrep = measure(lambda p=pattern: grep(root, p), repeat=15, warmup=2)  # type: ignore[misc]
        indexed = measure(lambda p=pattern: grep(root, p, index=index), repeat=50, warmup=5)  # type: ignore[misc]
        cases.append(Case.timed(f"grep {label}, ripgrep alone", ripgrep))
        cases.append(
            Case.timed(
                f"grep {label}, index warm", indexed, f"{ripgrep.median / indexed.median:.1f}x ripgrep", target=target
            )
        )
    edited = root / "tree" / "pkg022" / "sub" / "file_00022.md"
    original = edited.read_text()
    flip = [0]

    def edit() -> None:
        flip[0] += 1
        edited.write_text(original + f"\n# handler_4321_7 edit {flip[0]}\n")

    def tool_edit_then_grep() -> object:
        edit()
        index.note_written([os.path.relpath(edited, root)])
        return grep(root, LITERAL, index=index)

    def shell_edit_then_grep() -> object:
        edit()
        return grep(root, LITERAL, index=index)

    cases.append(
        Case.timed(
            "grep after a workspace edit", measure(tool_edit_then_grep, repeat=30, warmup=3), "edit included", target=15
        )
    )
    cases.append(
        Case.timed(
            "grep after a shell edit (inotify)",
            measure(shell_edit_then_grep, repeat=30, warmup=3),
            "edit included",
            target=30,
        )
    )
    assert grep(root, LITERAL, index=index) == grep(root, LITERAL)
    index.close()
    walked = WorkspaceIndex(root)
    walked._watch = None
    import toolcards.workspace._index as index_module

    available = index_module.inotify_available
    index_module.inotify_available = lambda root: False  # type: ignore[assignment]
    try:
        walked.wait_ready()
        index = walked
        cases.append(
            Case.timed(
                "grep after a shell edit (stat walk)",
                measure(shell_edit_then_grep, repeat=20, warmup=2),
                "edit included",
                target=30,
            )
        )
        assert grep(root, LITERAL, index=index) == grep(root, LITERAL)
    finally:
        index_module.inotify_available = available
        walked.close()
    return cases


def _search_cases(root: Path) -> list[Case]:
    topics = ["billing", "invoice", "parser", "network", "storage", "render", "cache", "schedule", "auth", "metrics"]
    verbs = ["load", "store", "check", "build", "send", "parse", "merge", "split", "count", "sort"]
    for number in range(5_000):
        directory = root / f"module{number % 100:02}"
        directory.mkdir(parents=True, exist_ok=True)
        lines = [
            f"{verbs[(number + line) % 10]} the {topics[(number * 7 + line) % 10]} record {number}.{line} quickly"
            for line in range(300)
        ]
        (directory / f"part_{number:04}.txt").write_text("\n".join(lines) + "\n")
    _age(root)
    index = WorkspaceIndex(root)
    index.wait_ready()
    finder = FileSearch(root, index=index, cache_dir=None, embeddings=None)
    cases = []
    try:
        started = time.perf_counter()
        finder.wait_idle()
        chunks = finder._chunks.alive
        cases.append(
            Case(f"workspace_search: cut {chunks:,} chunks", (time.perf_counter() - started) * 1000, "background")
        )
        # Rows as a model would give them (random unit vectors: the ranking's cost does not
        # depend on their values); queries embedded by the cheap hashing provider.
        rows = np.random.default_rng(7).standard_normal((len(finder._chunks.paths), 384)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        finder.use_vectors(get_embedding_service(EmbeddingParam(provider="hashing")), rows)
        queries = ["send the invoice record", "merge billing cache", "parse network metrics", "sort storage quickly"]
        turn = [0]

        def search() -> object:
            turn[0] += 1
            return finder.search(queries[turn[0] % len(queries)], None, 8)

        cases.append(
            Case.timed(
                f"workspace_search, {chunks:,} chunks",
                measure(search, repeat=40, warmup=4),
                "BM25 + vectors + fusion",
                target=20,
            )
        )
        edited = root / "module07" / "part_0007.txt"
        text = edited.read_text()
        flip = [0]

        def reindex() -> object:
            flip[0] += 1
            edited.write_text(text + f"quantum {flip[0]}\n")
            finder.sync()
            return None

        cases.append(
            Case.timed(
                "workspace_search re-index after one edit",
                measure(reindex, repeat=30, warmup=3),
                "refresh + 11 chunks cut",
                target=50,
            )
        )
        assert finder.search("quantum", None, 1)[0][0].path == "module07/part_0007.txt"
    finally:
        finder.close()
        index.close()
    local = get_embedding_service(EmbeddingParam())
    if local.embed(["probe"]) is not None:
        cases.append(
            Case.timed(
                "local model: embed one query",
                measure(lambda: local.embed(["find the billing parser"]), repeat=20, warmup=2),
                "MiniLM int8, added to a search by meaning",
            )
        )
    return cases


def _quality_cases(root: Path) -> list[Case]:
    root.mkdir()
    expected = build_corpus(root)
    _age(root)
    local = get_embedding_service(EmbeddingParam())
    has_model = local.embed(["probe"]) is not None
    index = WorkspaceIndex(root)
    index.wait_ready()
    finder = FileSearch(root, index=index, cache_dir=None, embeddings=local if has_model else None)
    cases = []
    try:
        finder.wait_idle()
        rankings: dict[str, Callable[[str], list[Hit]]] = {"BM25 alone": lambda q: finder.keyword_only(q, 8)}
        if has_model:
            rankings["embeddings alone"] = lambda q: finder.meaning_only(q, 8)
            rankings["hybrid (RRF)"] = lambda q: finder.search(q, None, 8)[0]
        for name, ranking in rankings.items():
            recall, reciprocal = 0.0, 0.0
            for query, path in expected.items():
                paths = [hit.path for hit in ranking(query)]
                if path in paths:
                    recall += 1
                    reciprocal += 1 / (paths.index(path) + 1)
            count = len(expected)
            note = f"{count} queries, {finder._chunks.alive} chunks"
            cases.append(Case(f"quality {name}: recall@8", 100 * recall / count, note, unit="%"))
            cases.append(Case(f"quality {name}: MRR", reciprocal / count, note, unit=""))
        if not has_model:
            cases.append(Case.skipped("quality with embeddings", f"the local model is unavailable: {local.failure}"))
    finally:
        finder.close()
        index.close()
    return cases
