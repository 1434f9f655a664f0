"""Search of a workspace's files by meaning and by keywords: :class:`FileSearch`.

Every text file the workspace index lists and the Markdown of every document (converted once
and cached: :mod:`toolcards.workspace._documents`) is cut into chunks of :data:`CHUNK_LINES`
lines, so every hit cites ``path:L10-42`` for ``workspace_read``. Two rankings are fused by
reciprocal rank (:data:`RRF_K`): BM25 over words (lower-cased; ``camelCase`` and
``snake_case`` split as well as kept whole) and the cosine of chunk and query embeddings from
the local model (:mod:`toolcards.vector`). Chunks are embedded in the background; the answer
says how many are covered, or that the search is keyword-only without a usable model.

Kept current through the tree's :class:`~toolcards.workspace._index.WorkspaceIndex`: each
search refreshes it and re-cuts files whose ``stat`` changed, a few at once, many in the
background while the answer says how far it got. Thread-safe; one per tree and process
(:func:`file_search`).
"""

from __future__ import annotations

import atexit
import itertools
import logging
import math
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from stat import S_IFDIR, S_IFREG
from typing import TYPE_CHECKING, Any

from toolcards.errors import RetriableError
from toolcards.workspace._glob import open_beneath
from toolcards.workspace._paths import display_name
from toolcards.workspace._searched_text import text_as_searched
from toolcards.workspace._tree import Tree

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from toolcards.vector import EmbeddingParam, EmbeddingService
    from toolcards.workspace._index import WorkspaceIndex
    from toolcards.workspace._watch import FileStat

# The trigram index (and the file watch under it) is imported by the first search, not by the
# workspace card, which needs only this module's bounds to describe workspace_search.

__all__ = [
    "CHUNK_LINES",
    "DEFAULT_TOP_K",
    "MAX_TOP_K",
    "RRF_K",
    "FileSearch",
    "Hit",
    "drop_file_searches",
    "file_search",
    "render",
    "tokens_of",
]

_log = logging.getLogger(__name__)

CHUNK_LINES = 30
"""Lines in a chunk (the last chunk of a file may hold fewer)."""

_MAX_CHUNK_CHARS = 4000
"""A chunk whose lines hold more characters is cut short (a file of very long lines)."""

RRF_K = 60
"""The constant of reciprocal rank fusion."""

DEFAULT_TOP_K = 8
"""Hits returned when the caller does not say."""

MAX_TOP_K = 50
"""Most hits one search returns."""

_RANKED = 100
"""How far down each ranking the fusion looks."""

_SYNC_AT_ONCE = 32
"""Up to this many changed files are cut into chunks during the search; more in the background."""

_EMBED_BATCH = 32
"""Chunks embedded together by the background thread."""

_K1, _B = 1.2, 0.75
"""BM25's parameters (the usual ones)."""

_WORD = re.compile(r"[^\W_]+(?:_[^\W_]+)*", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[^\W\d_a-zA-Z]+", re.UNICODE)
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
    ]
)


def tokens_of(text: str) -> list[str]:
    """The words BM25 counts in ``text``: each word lower-cased, and the parts of a compound
    (``parseConfig``, ``parse_config``) as well as the whole."""
    found: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group()
        lower = word.lower()
        parts = [part.lower() for piece in word.split("_") for part in _CAMEL.findall(piece)]
        if len(parts) > 1:
            found.append(lower)
            found.extend(part for part in parts if part not in _STOP)
        elif lower not in _STOP:
            found.append(lower)
    return found


@dataclass(frozen=True, slots=True)
class Hit:
    """One chunk found."""

    path: str
    start: int
    """First line (1-based)."""
    end: int
    """Last line (inclusive)."""
    score: float
    """Its fused score."""
    by: str
    """``"keywords"``, ``"meaning"`` or ``"keywords + meaning"``: the rankings it was in."""
    preview: str
    """Its first lines that hold something, shortened."""

    @property
    def cite(self) -> str:
        """``path:L10-42``."""
        return f"{display_name(self.path)}:L{self.start}-{self.end}"


@dataclass(slots=True)
class _Chunks:
    """The chunks, in slots a removed chunk frees for the next."""

    paths: list[str | None] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    terms: list[Counter[str] | None] = field(default_factory=list)
    free: list[int] = field(default_factory=list)
    by_file: dict[str, list[int]] = field(default_factory=dict)
    postings: dict[str, dict[int, int]] = field(default_factory=dict)
    """Word → {slot: count}."""
    alive: int = 0
    total_length: int = 0


class FileSearch:
    """The chunks of one tree, their words and embeddings (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        *,
        index: WorkspaceIndex,
        cache_dir: Path | None,
        embeddings: EmbeddingService | None,
    ) -> None:
        self.root = root
        self._index = index
        self._cache_dir = cache_dir
        self._embeddings = embeddings
        self._lock = threading.RLock()
        self._chunks = _Chunks()
        self._stats: dict[str, FileStat | None] = {}
        self._pending: dict[str, FileStat | None] = {}
        self._gone: set[str] = set()
        self._arrays: dict[str, tuple[Any, Any]] = {}
        self._lengths_array: Any = None
        self._vectors: Any = None
        self._embedded: Any = None
        self._to_embed: set[int] = set()
        self._wake = threading.Event()
        self._worker: threading.Thread | None = None
        self._closed = False
        self._synced_version = -1
        self._unsettled = False
        """Some file's stat could not be trusted at the last look: look again next time."""

    # -- the answer ---------------------------------------------------------------------------------

    def search(
        self, query: str, path_prefix: str | None = None, top_k: int = DEFAULT_TOP_K
    ) -> tuple[list[Hit], list[str]]:
        """The ``top_k`` best chunks for ``query`` under ``path_prefix``, and notes on what the
        ranking could not use (an index still building, embeddings absent or partial).

        Raises:
            RetriableError: ``path_prefix`` leaves the tree (a link to outside it included) or
                names nothing, with the words ``workspace_grep`` uses for its ``path``.
        """
        prefix = self._prefix(path_prefix)
        notes: list[str] = []
        if not self._index.ensure_started():
            status = self._index.status()
            notes.append(
                f"The workspace index is being built ({status.files_done:,} of {status.files_total:,} files "
                "read); search again in a few seconds, or use workspace_grep meanwhile."
            )
            return [], notes
        self.sync()
        unread = self._index.unread()
        if unread:
            notes.append(
                f"The index is still reading {unread:,} file{'s' if unread != 1 else ''} in the background (many "
                "changed at once, or the ignore rules changed): not searched yet."
            )
        with self._lock:
            waiting = len(self._pending)
            if waiting:
                notes.append(
                    f"{waiting:,} changed files are still being indexed: their old text (if any) was searched."
                )
            keyword_ranked = self._keyword_ranking(tokens_of(query), prefix)
            meaning_ranked, meaning_note = self._meaning_ranking(query, prefix)
            if meaning_note:
                notes.append(meaning_note)
            return self._fused(keyword_ranked, meaning_ranked, top_k), notes

    def _prefix(self, path_prefix: str | None) -> str:
        """``path_prefix`` as the chunks spell their paths (``""`` for the whole tree), checked
        as ``workspace_grep`` checks its ``path``: a link inside the tree is followed."""
        prefix = (path_prefix or "").strip().strip("/")
        if prefix in ("", "."):
            return ""
        tree = Tree(self.root)
        kind = tree.kind(prefix)
        if kind is None:
            raise RetriableError(f"Path {prefix!r} does not exist. Call workspace_glob to find paths, then retry.")
        if kind == S_IFDIR:
            with tree.directory(prefix) as directory:
                return "" if directory.rel in ("", ".") else directory.rel
        if kind == S_IFREG:
            with tree.open_file(prefix) as file:
                return file.rel
        return prefix  # a pipe, a socket or a device: no chunk is there

    def _keyword_ranking(self, words: list[str], prefix: str) -> list[int]:
        import numpy as np

        chunks = self._chunks
        if not words or not chunks.alive:
            return []
        size = len(chunks.paths)
        lengths = self._lengths()
        average = chunks.total_length / chunks.alive
        scores = np.zeros(size, dtype=np.float32)
        for word, count in Counter(words).items():
            arrays = self._posting_arrays(word)
            if arrays is None:
                continue
            slots, counts = arrays
            frequency = len(slots)
            idf = math.log(1 + (chunks.alive - frequency + 0.5) / (frequency + 0.5))
            norm = counts + _K1 * (1 - _B + _B * lengths[slots] / average)
            scores[slots] += count * idf * counts * (_K1 + 1) / norm
        found = np.flatnonzero(scores)
        order = found[np.argsort(-scores[found], kind="stable")]
        return self._under(order.tolist(), prefix)

    def _meaning_ranking(self, query: str, prefix: str) -> tuple[list[int], str | None]:
        import numpy as np

        service = self._embeddings
        if service is None:
            return [], "Keyword search only: search by meaning is turned off for this workspace (embedding=None)."
        if not service.available:
            return [], (
                f"Keyword search only: no embedding model is available ({service.failure}). Install "
                "toolcards[vector] and run `toolcards fetch-models` for search by meaning."
            )
        if self._vectors is None or not self._chunks.alive:
            self._start_worker()
            return [], "Search by meaning is still embedding the files: keyword results only for now."
        vector = service.embed([query])
        if vector is None:
            return [], f"Keyword search only: the embedding model failed ({service.failure})."
        size = len(self._chunks.paths)
        scores = self._vectors[:size] @ vector[0]
        scores[~self._embedded[:size]] = -np.inf
        embedded = int(self._embedded[:size].sum())
        note = None
        if self._to_embed:
            note = (
                f"Search by meaning covers {embedded:,} of {self._chunks.alive:,} chunks so far "
                "(the rest are being embedded)."
            )
        ranked_count = min(size, max(_RANKED * 4, 1))
        top = np.argpartition(-scores, ranked_count - 1)[:ranked_count] if size > ranked_count else np.arange(size)
        top = top[np.isfinite(scores[top])]
        order = top[np.argsort(-scores[top], kind="stable")].tolist()
        ranked = self._under(order, prefix)
        if prefix and len(ranked) < _RANKED and size > ranked_count:
            whole = np.argsort(-scores, kind="stable")
            ranked = self._under([slot for slot in whole.tolist() if np.isfinite(scores[slot])], prefix)
        return ranked, note

    def _under(self, slots: Iterable[int], prefix: str) -> list[int]:
        """The first :data:`_RANKED` of ``slots`` whose file is under ``prefix``."""
        paths = self._chunks.paths
        chosen: list[int] = []
        start = prefix + "/"
        for slot in slots:
            path = paths[slot]
            if path is None or (prefix and path != prefix and not path.startswith(start)):
                continue
            chosen.append(slot)
            if len(chosen) >= _RANKED:
                break
        return chosen

    def _fused(self, keyword: list[int], meaning: list[int], top_k: int) -> list[Hit]:
        scores: dict[int, float] = {}
        by: dict[int, set[str]] = {}
        for name, ranked in (("keywords", keyword), ("meaning", meaning)):
            for rank, slot in enumerate(ranked):
                scores[slot] = scores.get(slot, 0.0) + 1.0 / (RRF_K + rank + 1)
                by.setdefault(slot, set()).add(name)
        best = sorted(scores, key=lambda slot: (-scores[slot], slot))[:top_k]
        chunks = self._chunks
        return [
            Hit(
                path=chunks.paths[slot] or "",
                start=chunks.starts[slot],
                end=chunks.ends[slot],
                score=scores[slot],
                by=" + ".join(name for name in ("keywords", "meaning") if name in by[slot]),
                preview=_preview(chunks.texts[slot]),
            )
            for slot in best
        ]

    def keyword_only(self, query: str, top_k: int) -> list[Hit]:
        """The BM25 ranking alone (quality reports compare it with the fusion)."""
        self.sync()
        with self._lock:
            return self._fused(self._keyword_ranking(tokens_of(query), ""), [], top_k)

    def meaning_only(self, query: str, top_k: int) -> list[Hit]:
        """The embedding ranking alone (quality reports compare it with the fusion)."""
        self.sync()
        with self._lock:
            ranked, _ = self._meaning_ranking(query, "")
            return self._fused([], ranked, top_k)

    # -- keeping current ----------------------------------------------------------------------------

    def sync(self) -> None:
        """Bring the chunks up to the tree (see the module docstring)."""
        if not self._index.ready:
            return
        self._index.refresh()
        version = self._index.version
        if version == self._synced_version and not self._unsettled:
            return  # nothing changed in the index since the last look
        listing = self._index.listing(_searchable)
        with self._lock:
            self._synced_version = version
            self._unsettled = any(stat is None for stat in listing.values())
            changed = {rel: stat for rel, stat in listing.items() if stat is None or self._stats.get(rel) != stat}
            gone = [rel for rel in self._stats if rel not in listing]
            for rel in gone:
                self._remove_file(rel)
                self._stats.pop(rel, None)
                self._pending.pop(rel, None)
            if len(changed) <= _SYNC_AT_ONCE and not self._pending:
                for rel, stat in changed.items():
                    self._cut_file(rel, stat)
            else:
                self._pending.update(changed)
        if self._pending or self._to_embed:
            self._start_worker()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every file is cut and every chunk embedded (tests, benchmarks)."""
        import time

        stop_at = None if timeout is None else time.monotonic() + timeout
        self.sync()
        while True:
            with self._lock:
                embedding = bool(self._to_embed) and self._embeddings is not None and self._embeddings.available
                if not self._pending and not embedding:
                    return True
            if stop_at is not None and time.monotonic() > stop_at:
                return False
            self._start_worker()
            time.sleep(0.01)

    def close(self, wait_s: float = 10.0) -> None:
        """Stop the background thread, waiting up to ``wait_s`` for a batch it is embedding."""
        self._closed = True
        self._wake.set()
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(wait_s)

    def _cut_file(self, rel: str, stat: FileStat | None) -> None:
        text = self._read_text(rel)
        self._remove_file(rel)
        self._stats[rel] = stat
        if text:
            self._add_chunks(rel, text)

    def _read_text(self, rel: str) -> str | None:
        from toolcards.workspace._index import MAX_INDEXED_BYTES

        try:
            root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            fd = open_beneath(root_fd, rel, directory=False)
        except (OSError, ValueError):
            return None
        finally:
            os.close(root_fd)
        try:
            if _is_document(rel):
                return self._document_text(fd, rel)
            text = text_as_searched(fd, MAX_INDEXED_BYTES)
        except OSError:
            return None
        finally:
            os.close(fd)
        if text is None or "\x00" in text:
            return None
        return text

    def _document_text(self, fd: int, rel: str) -> str | None:
        if self._cache_dir is None:
            return None
        from toolcards.workspace._documents import MAX_DOCUMENT_BYTES, document_markdown

        data = bytearray()
        while chunk := os.read(fd, 1 << 20):
            data += chunk
            if len(data) > MAX_DOCUMENT_BYTES:
                return None
        try:
            return document_markdown(bytes(data), PurePosixPath(rel).suffix, self._cache_dir, shown_as=rel)
        except Exception:
            _log.debug("document %s could not be converted for search", rel, exc_info=True)
            return None

    def _add_chunks(self, rel: str, text: str) -> None:
        chunks = self._chunks
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        slots = []
        for first in range(0, len(lines), CHUNK_LINES):
            body = "\n".join(lines[first : first + CHUNK_LINES])[:_MAX_CHUNK_CHARS]
            if not body.strip():
                continue
            counts = Counter(tokens_of(f"{rel}\n{body}"))
            slot = chunks.free.pop() if chunks.free else len(chunks.paths)
            if slot == len(chunks.paths):
                chunks.paths.append(rel)
                chunks.starts.append(first + 1)
                chunks.ends.append(min(first + CHUNK_LINES, len(lines)))
                chunks.texts.append(body)
                chunks.lengths.append(sum(counts.values()))
                chunks.terms.append(counts)
            else:
                chunks.paths[slot] = rel
                chunks.starts[slot] = first + 1
                chunks.ends[slot] = min(first + CHUNK_LINES, len(lines))
                chunks.texts[slot] = body
                chunks.lengths[slot] = sum(counts.values())
                chunks.terms[slot] = counts
            for word, count in counts.items():
                chunks.postings.setdefault(word, {})[slot] = count
                self._arrays.pop(word, None)
            chunks.alive += 1
            chunks.total_length += chunks.lengths[slot]
            slots.append(slot)
            self._unembed(slot)
            self._to_embed.add(slot)
        if slots:
            chunks.by_file[rel] = slots
        self._lengths_array = None

    def _remove_file(self, rel: str) -> None:
        chunks = self._chunks
        for slot in chunks.by_file.pop(rel, []):
            counts = chunks.terms[slot]
            for word in counts or ():
                posting = chunks.postings.get(word)
                if posting is not None:
                    posting.pop(slot, None)
                    if not posting:
                        del chunks.postings[word]
                self._arrays.pop(word, None)
            chunks.paths[slot] = None
            chunks.terms[slot] = None
            chunks.texts[slot] = ""
            chunks.alive -= 1
            chunks.total_length -= chunks.lengths[slot]
            chunks.lengths[slot] = 0
            chunks.free.append(slot)
            self._to_embed.discard(slot)
            self._unembed(slot)
        self._lengths_array = None

    def _unembed(self, slot: int) -> None:
        if self._embedded is not None and slot < len(self._embedded):
            self._embedded[slot] = False

    def _lengths(self) -> npt.NDArray[np.float32]:
        import numpy as np

        if self._lengths_array is None or len(self._lengths_array) != len(self._chunks.lengths):
            self._lengths_array = np.asarray(self._chunks.lengths, dtype=np.float32)
        result: npt.NDArray[np.float32] = self._lengths_array
        return result

    def _posting_arrays(self, word: str) -> tuple[Any, Any] | None:
        import numpy as np

        cached = self._arrays.get(word)
        if cached is not None:
            return cached
        posting = self._chunks.postings.get(word)
        if not posting:
            return None
        slots = np.fromiter(posting.keys(), dtype=np.int64, count=len(posting))
        counts = np.fromiter(posting.values(), dtype=np.float32, count=len(posting))
        self._arrays[word] = (slots, counts)
        return slots, counts

    # -- the background thread ----------------------------------------------------------------------

    def _start_worker(self) -> None:
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name=f"workspace-search {self.root}", daemon=True)
                self._worker.start()
            self._wake.set()

    def _work(self) -> None:
        while not self._closed:
            did = self._cut_some() or self._embed_some()
            if not did:
                self._wake.clear()
                if not self._wake.wait(5.0):
                    return

    def _cut_some(self) -> bool:
        with self._lock:
            batch = list(self._pending.items())[:_SYNC_AT_ONCE]
            for rel, stat in batch:
                del self._pending[rel]
                self._cut_file(rel, stat)
        return bool(batch)

    def _embed_some(self) -> bool:
        import numpy as np

        service = self._embeddings
        if service is None or not service.available:
            return False
        with self._lock:
            slots = list(itertools.islice(self._to_embed, _EMBED_BATCH))
            texts = [f"{self._chunks.paths[slot]}\n{self._chunks.texts[slot]}" for slot in slots]
        if not slots:
            return False
        vectors = service.embed(texts)
        if vectors is None:
            return False
        with self._lock:
            size = len(self._chunks.paths)
            if self._vectors is None or len(self._vectors) < size:
                capacity = max(1024, 2 * size)
                grown = np.zeros((capacity, vectors.shape[1]), dtype=np.float32)
                flags = np.zeros(capacity, dtype=bool)
                if self._vectors is not None:
                    grown[: len(self._vectors)] = self._vectors
                    flags[: len(self._embedded)] = self._embedded
                self._vectors, self._embedded = grown, flags
            for slot, text, vector in zip(slots, texts, vectors, strict=True):
                # A slot cut again while it was embedded keeps waiting for its new text.
                if slot in self._to_embed and f"{self._chunks.paths[slot]}\n{self._chunks.texts[slot]}" == text:
                    self._vectors[slot] = vector
                    self._embedded[slot] = True
                    self._to_embed.discard(slot)
        return True

    # -- loading from outside (benchmarks) ----------------------------------------------------------

    def use_vectors(self, service: EmbeddingService, vectors: npt.NDArray[np.float32]) -> None:
        """Rank by ``vectors`` (one L2-normalised row per chunk slot) and embed queries with
        ``service``: embeddings made elsewhere (benchmarks)."""
        import numpy as np

        with self._lock:
            self._embeddings = service
            self._vectors = vectors
            self._embedded = np.ones(len(vectors), dtype=bool)
            self._to_embed.clear()


def _searchable(rel: str, is_text: bool) -> bool:
    return is_text or _is_document(rel)


def _is_document(rel: str) -> bool:
    from toolcards.workspace._documents import is_document

    return is_document(PurePosixPath(rel))


def _preview(text: str, lines: int = 3, width: int = 160) -> str:
    shown = [line.strip() for line in text.split("\n") if line.strip()][:lines]
    return "\n".join(line if len(line) <= width else line[: width - 1] + "…" for line in shown)


def render(hits: list[Hit], notes: list[str], query: str) -> str:
    """The answer a model reads: notes, then each hit's citation and preview."""
    out = [f"({note})" for note in notes]
    if not hits:
        out.append(f"No file matches {query!r}.")
    for hit in hits:
        out.append(f"{hit.cite}  [{hit.by}]")
        out.extend(f"    {line}" for line in hit.preview.split("\n") if line)
    if hits:
        out.append("(open a hit with workspace_read path, offset=<first line>)")
    return "\n".join(out)


_searches: dict[str, FileSearch] = {}
_searches_lock = threading.Lock()


@atexit.register
def _stop_at_exit() -> None:
    # A model still running in a daemon thread when the interpreter ends aborts the process.
    drop_file_searches()


def file_search(
    root: Path, *, cache_dir: Path | None = None, embedding: EmbeddingParam | None = None, use_embeddings: bool = True
) -> FileSearch:
    """The :class:`FileSearch` of the tree at ``root``, made on first use (with the model of
    ``embedding``, the local one by default; none when ``use_embeddings`` is false)."""
    key = os.path.realpath(root)
    with _searches_lock:
        found = _searches.get(key)
        if found is not None:
            return found
        service = None
        if use_embeddings:
            from toolcards.vector import EmbeddingParam, get_embedding_service

            service = get_embedding_service(embedding or EmbeddingParam())
        from toolcards.workspace._index import workspace_index

        index = workspace_index(Path(key))
        assert index is not None
        found = _searches[key] = FileSearch(Path(key), index=index, cache_dir=cache_dir, embeddings=service)
        return found


def drop_file_searches(roots: Callable[[str], bool] = lambda _: True) -> None:
    """Stop and forget the searches of the trees ``roots`` selects (tests)."""
    with _searches_lock:
        for key in [key for key in _searches if roots(key)]:
            _searches.pop(key).close()
