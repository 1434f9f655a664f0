"""Trigrams of file text and their posting lists: which files hold each 3-byte substring.

**What is indexed.** A file's text as grep reads it (decoded, then UTF-8; see
:func:`index_bytes`) with ASCII letters lower-cased; every 3-byte window that holds
neither ``\\n`` nor ``\\r`` gives a code ``b0 << 16 | b1 << 8 | b2``. No grep pattern can hold a
line break, so windows across one are never asked for.

**Posting lists.** Files are numbered; a trigram's files are kept as the sorted numbers
(``uint32``) when few hold it, or as a bitmap (one bit a file, little-endian) when more than
one in :data:`DENSE_FRACTION` do, whichever is smaller. A lookup turns either into a Python
``int`` used as a bitmap, so AND and OR of many lists are single C operations; the decoded
bitmaps of the lists asked for most recently are kept (:data:`DECODED_CACHE`).

:func:`codes_of_texts` computes the codes of many texts at once with numpy when it is
installed, else one text at a time in Python (:func:`trigram_set`); a test checks that both
give the same codes.
"""

from __future__ import annotations

import bisect
import itertools
import re
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Sequence

__all__ = [
    "DECODED_CACHE",
    "DENSE_FRACTION",
    "Postings",
    "PostingsBuilder",
    "codes_of_texts",
    "index_bytes",
    "set_bits",
    "trigram_set",
]

DENSE_FRACTION = 32
"""A trigram held by more than one file in this many is kept as a bitmap."""

DECODED_CACHE = 4096
"""How many decoded posting lists a :class:`Postings` keeps."""

_LINE_BREAKS = re.compile(rb"[\r\n]+")
_NONZERO = re.compile(rb"[^\x00]")
_BITS = tuple(1 << bit for bit in range(8))


def index_bytes(text: str) -> bytes:
    """``text`` as the index spells it: UTF-8 with ASCII letters lower-cased."""
    return text.encode("utf-8", "surrogatepass").lower()


def trigram_set(data: bytes) -> set[int]:
    """The trigram codes of ``data`` (as :func:`index_bytes` gives it), in pure Python."""
    codes: set[int] = set()
    for piece in _LINE_BREAKS.split(data):
        # Three shifted views zipped: the fastest pure-Python walk over the windows.
        codes.update((a << 16) | (b << 8) | c for a, b, c in zip(piece, piece[1:], piece[2:], strict=False))
    return codes


def codes_of_texts(texts: Sequence[bytes]) -> list[set[int]]:
    """:func:`trigram_set` of each of ``texts``, with numpy when it is installed."""
    try:
        import numpy as np
    except ImportError:
        return [trigram_set(data) for data in texts]
    if not texts:
        return []
    # One pass over every text, joined by line breaks (no window spans one), then one
    # unique over (text, code) keys.
    joined = b"\n".join(texts)
    raw = np.frombuffer(joined, dtype=np.uint8)
    if raw.size < 3:
        return [trigram_set(data) for data in texts]
    wide = raw.astype(np.uint32)
    codes = (wide[:-2] << 16) | (wide[1:-1] << 8) | wide[2:]
    breaks = (raw == 10) | (raw == 13)
    keep = ~(breaks[:-2] | breaks[1:-1] | breaks[2:])
    lengths = np.fromiter((len(data) + 1 for data in texts), dtype=np.int64, count=len(texts))
    owner = np.repeat(np.arange(len(texts), dtype=np.uint64), lengths)[: codes.size]
    keys = np.unique((owner[keep] << np.uint64(24)) | codes[keep].astype(np.uint64))
    owners = (keys >> np.uint64(24)).astype(np.int64)
    values = (keys & np.uint64(0xFFFFFF)).astype(np.uint32)
    bounds = np.searchsorted(owners, np.arange(len(texts) + 1))
    flat = values.tolist()
    return [set(flat[bounds[i] : bounds[i + 1]]) for i in range(len(texts))]


def set_bits(bits: int) -> list[int]:
    """The numbers of the bits set in ``bits``, ascending."""
    if not bits:
        return []
    data = bits.to_bytes((bits.bit_length() + 7) // 8, "little")
    found = []
    for match in _NONZERO.finditer(data):
        position = match.start()
        value = data[position]
        base = position * 8
        for bit in range(8):
            if value & _BITS[bit]:
                found.append(base + bit)
    return found


def _bitmap_of(numbers: Iterable[int], size: int) -> int:
    """The bitmap of ``numbers`` (each below ``size``)."""
    buffer = bytearray((size + 7) // 8)
    for number in numbers:
        buffer[number >> 3] |= _BITS[number & 7]
    return int.from_bytes(buffer, "little")


class Postings:
    """Immutable posting lists of ``files`` numbered files: trigram code → bitmap of files.

    Thread-safe: lookups may run in several threads at once (the cache has its own lock).
    """

    __slots__ = ("_blob", "_cache", "_codes", "_kinds", "_lock", "_offsets", "files")

    def __init__(self, files: int, codes: array[int], kinds: bytes, offsets: array[int], blob: bytes) -> None:
        """Lists as :class:`PostingsBuilder` or :meth:`decode` made them.

        ``codes`` ascending; ``blob[offsets[i]:offsets[i + 1]]`` holds trigram ``codes[i]``'s
        files: native ``uint32`` numbers when ``kinds[i]`` is 0, a little-endian bitmap when 1.
        """
        self.files = files
        """How many file numbers the lists cover (0 to ``files - 1``)."""
        self._codes = codes
        self._kinds = kinds
        self._offsets = offsets
        self._blob = blob
        self._cache: OrderedDict[int, int] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def empty(cls) -> Postings:
        """No file, no trigram."""
        return cls(0, array("I"), b"", array("Q", [0]), b"")

    def __len__(self) -> int:
        return len(self._codes)

    @property
    def size(self) -> int:
        """Bytes the lists take in memory (codes, kinds, offsets and their data)."""
        return 4 * len(self._codes) + len(self._kinds) + 8 * len(self._offsets) + len(self._blob)

    def codes(self) -> array[int]:
        """Every trigram code held, ascending (do not change it)."""
        return self._codes

    def bits(self, code: int) -> int:
        """The bitmap of the files holding trigram ``code`` (0 when none does)."""
        with self._lock:
            cached = self._cache.get(code)
            if cached is not None:
                self._cache.move_to_end(code)
                return cached
        index = bisect.bisect_left(self._codes, code)
        if index == len(self._codes) or self._codes[index] != code:
            return 0
        bits = self._decoded(index)
        with self._lock:
            self._cache[code] = bits
            if len(self._cache) > DECODED_CACHE:
                self._cache.popitem(last=False)
        return bits

    def weight(self, code: int) -> int:
        """Bytes of trigram ``code``'s list (0 when no file holds it): rarer trigrams weigh less."""
        index = bisect.bisect_left(self._codes, code)
        if index == len(self._codes) or self._codes[index] != code:
            return 0
        return self._offsets[index + 1] - self._offsets[index]

    def all_bits(self) -> Iterable[tuple[int, int]]:
        """Every (code, bitmap), ascending by code, without filling the cache."""
        for index, code in enumerate(self._codes):
            yield code, self._decoded(index)

    def _decoded(self, index: int) -> int:
        data = self._blob[self._offsets[index] : self._offsets[index + 1]]
        if self._kinds[index]:
            return int.from_bytes(data, "little")
        numbers = array("I")
        numbers.frombytes(data)
        return _bitmap_of(numbers, self.files)

    def encode(self) -> tuple[bytes, bytes, bytes, bytes]:
        """The lists as bytes: codes, kinds, offsets and data (see :meth:`decode`)."""
        return self._codes.tobytes(), self._kinds, self._offsets.tobytes(), self._blob

    @classmethod
    def decode(cls, files: int, parts: Sequence[bytes]) -> Postings:
        """Lists from :meth:`encode`'s bytes (native byte order), checked for consistency.

        Raises:
            ValueError: the parts do not fit together (a damaged index).
        """
        raw_codes, kinds, raw_offsets, blob = parts
        codes, offsets = array("I"), array("Q")
        codes.frombytes(raw_codes)
        offsets.frombytes(raw_offsets)
        if len(kinds) != len(codes) or len(offsets) != len(codes) + 1 or offsets[0] != 0 or offsets[-1] != len(blob):
            raise ValueError("posting tables of different lengths")
        if any(later <= earlier for earlier, later in itertools.pairwise(codes)):
            raise ValueError("trigram codes out of order")
        if codes and codes[-1] > 0xFFFFFF:
            raise ValueError("trigram code out of range")
        bitmap_bytes = (files + 7) // 8
        for index, kind in enumerate(kinds):
            length = offsets[index + 1] - offsets[index]
            if length < 0 or kind > 1 or (kind == 1 and length > bitmap_bytes) or (kind == 0 and length % 4):
                raise ValueError("posting list out of shape")
        postings = cls(files, codes, bytes(kinds), offsets, bytes(blob))
        numbers = array("I")
        for index, kind in enumerate(kinds):
            if kind == 0:
                numbers.frombytes(postings._blob[offsets[index] : offsets[index + 1]])
        if numbers and max(numbers) >= files:
            raise ValueError("file number past the file table")
        return postings


class PostingsBuilder:
    """Collects which files hold which trigram codes into :class:`Postings`."""

    def __init__(self) -> None:
        self._lists: dict[int, array[int]] = {}
        self._files = 0

    def add(self, number: int, codes: Iterable[int]) -> None:
        """File ``number`` (greater than every number added before) holds ``codes``."""
        lists = self._lists
        for code in codes:
            found = lists.get(code)
            if found is None:
                lists[code] = array("I", (number,))
            else:
                found.append(number)
        if number >= self._files:
            self._files = number + 1

    def add_bits(self, code: int, bits: int) -> None:
        """The files of ``bits`` hold ``code``; each code is given once."""
        numbers = set_bits(bits)
        if numbers:
            self._lists[code] = array("I", numbers)
            self._files = max(self._files, numbers[-1] + 1)

    def build(self, files: int | None = None) -> Postings:
        """The lists of everything added, for ``files`` numbers (default: one past the highest)."""
        total = max(self._files, files or 0)
        dense_above = max(1, total // DENSE_FRACTION)
        codes = array("I", sorted(self._lists))
        kinds = bytearray(len(codes))
        offsets = array("Q", [0])
        blob = bytearray()
        for index, code in enumerate(codes):
            numbers = self._lists[code]
            if len(numbers) > dense_above:
                kinds[index] = 1
                bitmap = _bitmap_of(numbers, total)
                blob += bitmap.to_bytes((bitmap.bit_length() + 7) // 8, "little")
            else:
                blob += numbers.tobytes()
            offsets.append(len(blob))
        self._lists = {}
        return Postings(total, codes, bytes(kinds), offsets, bytes(blob))
