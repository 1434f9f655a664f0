"""File versions in the store, by content: compressed, kept as deltas, split into rows.

The journal (:mod:`toolcards.workspace._journal`) keeps each version it needs under its SHA-256
(:func:`~toolcards.workspace._models.content_digest`) in the tree's blob namespace (collection
:data:`BLOBS`), so a version is stored once whoever writes it again.

**Encoding:** a tag byte and a body: ``z`` (zlib level 1: a write pays for it), ``r`` (raw,
when compressing does not help) or ``d``, a delta against a *base* version: the shared prefix
and suffix lengths (8 bytes each, little-endian), then the new middle, raw up to 256 bytes,
else zlib primed with the base's middle (its last 32 KiB). A delta is kept when smaller than
half the compressed version, and chains are at most :data:`MAX_DEPTH` long, so a version reads
in one query of known rows (:class:`BlobInfo`, in the journal's index).

**Rows:** base64 text in parts of at most :data:`PART_CHARS` (keys ``<digest>``,
``<digest>/1``...), so no row is large; a payload up to :data:`INLINE_CHARS` rides in the index
(:attr:`BlobInfo.inline`). Blobs never change once written; deleting them is the journal's
retention. Decoded versions stay in a bounded cache (:data:`CACHE_BYTES`). Thread-safe.
"""

from __future__ import annotations

import base64
import binascii
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from toolcards.errors import StoreError
from toolcards.store._base import Change, Store
from toolcards.store._codec import JSONText

__all__ = [
    "BLOBS",
    "CACHE_BYTES",
    "INLINE_CHARS",
    "MAX_DEPTH",
    "PART_CHARS",
    "BlobInfo",
    "BlobStore",
    "EncodedBlob",
]

BLOBS = "blobs"
"""The collection of the blob namespace holding the payloads."""

PART_CHARS = 256 * 1024
"""Characters of base64 text one row holds at most; a larger payload takes several rows."""

INLINE_CHARS = 256
"""A payload of at most this many characters of base64 (a one-line edit's delta, a tiny file)
is kept in the journal's index, with what the index records about it, not in a row of its own:
recording the change then takes one store transaction instead of two."""

MAX_DEPTH = 64
"""Deltas one version may be away from a version stored whole."""

CACHE_BYTES = 32 * 1024 * 1024
"""Bytes of decoded versions each :class:`BlobStore` keeps in memory."""

_WINDOW = 32 * 1024
"""zlib's window: the most of the base a delta's compressor can refer to."""
_BLOCK = 8192
_SURE_DELTA = 32
"""A delta at most this many times smaller than its version is kept without compressing the
version whole to compare (zlib rarely makes text 16 times smaller)."""
_HEADER = struct.Struct("<QQ")
_RAW_MIDDLE = 256
"""A delta's middle this short is kept as it is."""
_WRITE_BATCH_CHARS = 8 * 1024 * 1024
"""Characters of payload one blob transaction writes at most (a first scan writes many)."""


@dataclass(frozen=True, slots=True)
class BlobInfo:
    """What the journal's index keeps about one stored version."""

    base: str | None
    """The digest of the version this one is a delta against (``None``: stored whole)."""
    depth: int
    """Deltas between this version and one stored whole (0: stored whole)."""
    size: int
    """Characters it takes in the store (its rows' text)."""
    parts: int
    """Rows it takes in the blob namespace (0: it is :attr:`inline`)."""
    inline: str | None = None
    """Its payload as base64 text, when it is small enough to ride in the index itself
    (:data:`INLINE_CHARS`)."""

    def to_json(self) -> list[object]:
        """The compact form the index stores."""
        value: list[object] = [self.base, self.depth, self.size, self.parts]
        if self.inline is not None:
            value.append(self.inline)
        return value

    @classmethod
    def from_json(cls, value: object) -> BlobInfo:
        """Read back what :meth:`to_json` gave."""
        if not isinstance(value, list) or len(value) not in (4, 5):
            raise ValueError(f"not a blob record: {value!r}")
        base, depth, size, parts = value[:4]
        inline = value[4] if len(value) == 5 and isinstance(value[4], str) else None
        return cls(
            base=base if isinstance(base, str) else None,
            depth=int(depth),
            size=int(size),
            parts=int(parts),
            inline=inline,
        )


@dataclass(frozen=True, slots=True)
class EncodedBlob:
    """One version, encoded and ready to write."""

    digest: str
    """Its SHA-256, the key it is stored under."""
    info: BlobInfo
    """What the index records about it."""
    rows: tuple[Change, ...]
    """The rows holding its payload."""


class BlobStore:
    """The versions of one tree, in one store namespace.

    Args:
        store: the team's store.
        namespace: the tree's blob namespace.
        cache_bytes: decoded versions kept in memory at most.
    """

    def __init__(self, store: Store, namespace: str, *, cache_bytes: int = CACHE_BYTES) -> None:
        self.store = store
        self.namespace = namespace
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._cached = 0
        self._lock = threading.Lock()

    # -- writing --------------------------------------------------------------------------------

    def encode(self, digest: str, data: bytes, base: tuple[str, bytes, BlobInfo] | None = None) -> EncodedBlob:
        """Encode ``data`` (whose SHA-256 is ``digest``), as a delta against ``base`` when
        that is worth it; ``base`` is ``(digest, content, info)`` of a stored version.

        Keeps ``data`` in the cache: it is about to be read back by the next change of its file.
        """
        self.remember(digest, data)
        delta = None
        if base is not None and base[2].depth < MAX_DEPTH and base[0] != digest:
            delta = _delta(base[1], data)
        if delta is not None and len(delta) * _SURE_DELTA <= len(data):
            # Far smaller than any compression of the whole: not worth compressing it to compare.
            payload, info_base, depth = delta, base[0] if base else None, (base[2].depth + 1) if base else 0
        else:
            whole = zlib.compress(data, 1)
            payload = b"z" + whole if len(whole) < len(data) else b"r" + data
            info_base, depth = None, 0
            if delta is not None and base is not None and len(delta) * 2 < len(payload):
                payload, info_base, depth = delta, base[0], base[2].depth + 1
        text = base64.b64encode(payload).decode("ascii")
        if len(text) <= INLINE_CHARS:
            info = BlobInfo(base=info_base, depth=depth, size=len(text), parts=0, inline=text)
            return EncodedBlob(digest=digest, info=info, rows=())
        parts = [text[start : start + PART_CHARS] for start in range(0, len(text), PART_CHARS)]
        rows = tuple(
            Change(collection=BLOBS, key=_part_key(digest, index), value=JSONText(f'"{part}"'))
            for index, part in enumerate(parts)
        )
        info = BlobInfo(base=info_base, depth=depth, size=len(text), parts=len(parts))
        return EncodedBlob(digest=digest, info=info, rows=rows)

    def write(self, blobs: Sequence[EncodedBlob]) -> None:
        """Commit ``blobs``, in transactions of at most 8 MiB of text each.

        Raises:
            StoreError: a transaction failed; the blobs of earlier ones stay (unreferenced
                versions harm nothing, and are written again when needed).
        """
        batch: list[Change] = []
        size = 0
        for blob in blobs:
            batch.extend(blob.rows)
            size += blob.info.size
            if size >= _WRITE_BATCH_CHARS:
                self.store.apply(self.namespace, batch)
                batch, size = [], 0
        if batch:
            self.store.apply(self.namespace, batch)

    def delete(self, blobs: Mapping[str, BlobInfo]) -> None:
        """Delete the rows of ``blobs`` (digest → what the index knew of it) in one transaction.

        Raises:
            StoreError: the transaction failed; nothing was deleted.
        """
        rows = [
            Change(collection=BLOBS, key=_part_key(digest, index), value=None)
            for digest, info in blobs.items()
            for index in range(info.parts)
        ]
        with self._lock:
            for digest in blobs:
                data = self._cache.pop(digest, None)
                if data is not None:
                    self._cached -= len(data)
        if rows:
            self.store.apply(self.namespace, rows)

    # -- reading --------------------------------------------------------------------------------

    def read(self, digests: Iterable[str], catalog: Mapping[str, BlobInfo]) -> dict[str, bytes]:
        """The content of each of ``digests``, reading every row they need in one query.

        ``catalog`` is the index's knowledge of the stored versions. A digest it does not
        hold is left out of the result (the version was never kept, or was compacted).

        Raises:
            StoreError: the read failed, or a row is missing or damaged (the message names
                the version).
        """
        requested = list(dict.fromkeys(digests))
        found: dict[str, bytes] = {}
        wanted: list[str] = []
        with self._lock:
            for digest in requested:
                data = self._cache.get(digest)
                if data is not None:
                    self._cache.move_to_end(digest)
                    found[digest] = data
                elif digest in catalog:
                    wanted.append(digest)
        if not wanted:
            return found
        needed = self._chains(wanted, catalog, found)
        payloads = self._payloads(needed)

        def decoded(digest: str) -> bytes:
            # Iterative: a chain is at most MAX_DEPTH long, but a recursion per link is not needed.
            chain: list[str] = []
            current = digest
            while current not in found:
                chain.append(current)
                base = needed[current].base
                if base is None:
                    break
                current = base
            for link in reversed(chain):
                found[link] = self._decode(link, payloads[link], needed[link].base, found)
            return found[digest]

        for digest in wanted:
            self.remember(digest, decoded(digest))
        return {digest: found[digest] for digest in requested if digest in found}

    def _chains(
        self, wanted: list[str], catalog: Mapping[str, BlobInfo], found: dict[str, bytes]
    ) -> dict[str, BlobInfo]:
        """Every version on the way from each of ``wanted`` to one stored whole or one in the
        cache (those cached are added to ``found``)."""
        needed: dict[str, BlobInfo] = {}
        for digest in wanted:
            current: str | None = digest
            while current is not None and current not in needed and current not in found:
                cached = self._cached_copy(current)
                if cached is not None:
                    found[current] = cached
                    break
                info = catalog.get(current)
                if info is None:
                    raise self._damaged(digest, f"its base {current} is not in the journal's index")
                needed[current] = info
                current = info.base
        return needed

    def _payloads(self, needed: dict[str, BlobInfo]) -> dict[str, bytes]:
        """The stored bytes (whole or delta) of each of ``needed``, read in one query."""
        keys = [_part_key(digest, index) for digest, info in needed.items() for index in range(info.parts)]
        rows = self.store.get(self.namespace, BLOBS, keys) if keys else {}
        payloads: dict[str, bytes] = {}
        for digest, info in needed.items():
            try:
                text = (
                    info.inline
                    if info.inline is not None
                    else "".join(rows[_part_key(digest, index)] for index in range(info.parts))
                )
                payloads[digest] = base64.b64decode(text, validate=True)
            except (KeyError, TypeError, binascii.Error) as exc:
                raise self._damaged(digest, f"its rows are missing or damaged ({type(exc).__name__})") from exc
        return payloads

    def remember(self, digest: str, data: bytes) -> None:
        """Keep ``data`` as the content of ``digest`` in the cache (larger than a quarter of
        the cache: not kept)."""
        if len(data) > self._cache_bytes // 4:
            return
        with self._lock:
            if digest in self._cache:
                self._cache.move_to_end(digest)
                return
            self._cache[digest] = data
            self._cached += len(data)
            while self._cached > self._cache_bytes:
                _, evicted = self._cache.popitem(last=False)
                self._cached -= len(evicted)

    def _cached_copy(self, digest: str) -> bytes | None:
        with self._lock:
            return self._cache.get(digest)

    def _decode(self, digest: str, payload: bytes, base: str | None, found: Mapping[str, bytes]) -> bytes:
        tag, body = payload[:1], payload[1:]
        try:
            if tag == b"r":
                return body
            if tag == b"z":
                return zlib.decompress(body)
            if tag == b"d" and base is not None:
                return _undelta(found[base], body)
        except (zlib.error, struct.error, KeyError) as exc:
            raise self._damaged(digest, f"it does not decode ({exc})") from exc
        raise self._damaged(digest, f"its encoding {tag!r} is unknown")

    def _damaged(self, digest: str, why: str) -> StoreError:
        return StoreError(
            f"Version {digest[:12]} of namespace {self.namespace!r} cannot be read: {why}. The journal cannot "
            "restore it; restore the store from a backup if it matters."
        )


def _part_key(digest: str, index: int) -> str:
    return digest if index == 0 else f"{digest}/{index}"


def _delta(base: bytes, data: bytes) -> bytes:
    """``data`` as a delta against ``base``: what they share at both ends, and the middle
    (as it is when it is short: a compressor costs more to make than a short middle saves)."""
    prefix = _common_prefix(base, data)
    suffix = _common_suffix(base, data, min(len(base), len(data)) - prefix)
    middle = data[prefix : len(data) - suffix]
    if len(middle) <= _RAW_MIDDLE:
        return b"d" + _HEADER.pack(prefix, suffix) + b"r" + middle
    primer = base[prefix : len(base) - suffix][-_WINDOW:]
    compressor = zlib.compressobj(1, zdict=primer) if primer else zlib.compressobj(1)
    return b"d" + _HEADER.pack(prefix, suffix) + b"z" + compressor.compress(middle) + compressor.flush()


def _undelta(base: bytes, body: bytes) -> bytes:
    prefix, suffix = _HEADER.unpack_from(body)
    if prefix + suffix > len(base):
        raise struct.error("the delta's ends are longer than its base")
    kind, rest = body[_HEADER.size : _HEADER.size + 1], body[_HEADER.size + 1 :]
    if kind == b"r":
        middle = rest
    elif kind == b"z":
        primer = base[prefix : len(base) - suffix][-_WINDOW:]
        decompressor = zlib.decompressobj(zdict=primer) if primer else zlib.decompressobj()
        middle = decompressor.decompress(rest) + decompressor.flush()
    else:
        raise struct.error(f"unknown middle {kind!r}")
    return base[:prefix] + middle + base[len(base) - suffix :]


def _common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes ``a`` and ``b`` share (slices compare in C, block by block)."""
    limit = min(len(a), len(b))
    start = 0
    while start < limit:
        end = min(start + _BLOCK, limit)
        if a[start:end] != b[start:end]:
            low, high = start, end  # the first difference is in [low, high)
            while high - low > 1:
                middle = (low + high) // 2
                if a[low:middle] == b[low:middle]:
                    low = middle
                else:
                    high = middle
            return low
        start = end
    return limit


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """How many trailing bytes ``a`` and ``b`` share, at most ``limit``."""
    size_a, size_b = len(a), len(b)
    done = 0
    while done < limit:
        step = min(_BLOCK, limit - done)
        if a[size_a - done - step : size_a - done] != b[size_b - done - step : size_b - done]:
            low, high = done, done + step  # the first difference from the end is in [low, high)
            while high - low > 1:
                middle = (low + high) // 2
                if a[size_a - middle : size_a - low] == b[size_b - middle : size_b - low]:
                    low = middle
                else:
                    high = middle
            return low
        done += step
    return limit
