"""A file's text as grep searches it: decoded as ripgrep's ``--encoding utf-8`` reads it,
chunk by chunk, under a budget of bytes read."""

from __future__ import annotations

import codecs
import itertools
import os
from collections.abc import Iterator

from toolcards.core._deadline import check_deadline

__all__ = ["CHUNK_BYTES", "Budget", "BudgetSpent", "decoded_chunks", "decoded_from", "text_as_searched"]

CHUNK_BYTES = 64 * 1024
"""How much of a file is read at once."""


class Budget:
    """Bytes that may still be read; reading past them raises :class:`BudgetSpent`."""

    def __init__(self, left: int) -> None:
        self.left = left

    def spend(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise BudgetSpent


class BudgetSpent(Exception):
    """The reading budget of a call ran out."""


def decoded_chunks(fd: int, budget: Budget | None = None) -> Iterator[str]:
    """The text of an open file, chunk by chunk, as ripgrep's ``--encoding utf-8`` reads it.

    A UTF-8 byte-order mark is dropped, UTF-16 ones select UTF-16, bytes that are not
    valid become U+FFFD. Behind a byte-order mark, one more of the same encoding is dropped
    too: ripgrep's reader drops the first and its decoder the second.
    """
    data = _read(fd, budget)
    encoding, skip = "utf-8", 0
    if data.startswith(codecs.BOM_UTF8):
        skip = 3
    elif data.startswith(codecs.BOM_UTF16_LE):
        encoding, skip = "utf-16-le", 2
    elif data.startswith(codecs.BOM_UTF16_BE):
        encoding, skip = "utf-16-be", 2
    data = data[skip:]
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    chunks = decoded_from(fd, encoding, budget, decoder)
    if data:
        chunks = itertools.chain([decoder.decode(data)], chunks)
    if not skip:
        yield from chunks
        return
    for chunk in chunks:  # the first text, once some is decoded, may start with the second mark
        if chunk:
            yield chunk.removeprefix("\ufeff")
            break
    yield from chunks


def text_as_searched(fd: int, max_bytes: int) -> str | None:
    """The whole text of an open file as grep searches it (see :func:`decoded_chunks`), or
    None when it holds more than ``max_bytes`` bytes."""
    try:
        return "".join(decoded_chunks(fd, Budget(max_bytes)))
    except BudgetSpent:
        return None


def decoded_from(
    fd: int, encoding: str, budget: Budget | None, decoder: codecs.IncrementalDecoder | None = None
) -> Iterator[str]:
    """The text of an open file from where it stands, chunk by chunk, invalid bytes as U+FFFD."""
    if decoder is None:
        decoder = codecs.getincrementaldecoder(encoding)("replace")
    while data := _read(fd, budget):
        yield decoder.decode(data)
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def _read(fd: int, budget: Budget | None) -> bytes:
    check_deadline()
    data = os.read(fd, CHUNK_BYTES)
    if budget is not None:
        budget.spend(len(data))
    return data
