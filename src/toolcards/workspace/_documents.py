"""Office documents and PDFs as Markdown: :func:`convert_document`.

:func:`document_markdown` converts the bytes of a document (the workspace card reads them
through its :class:`~toolcards.workspace._tree.Tree`, at most :data:`MAX_DOCUMENT_BYTES`,
and markitdown gets them as a stream, never a path); :func:`convert_document` reads a file
of the host first. PDF, DOCX, XLSX and PPTX files are converted with markitdown (the ``docs`` extra),
imported on first use because the import alone takes about 0.8 s. The Markdown is cached
under ``cache_dir/documents/``, keyed by a hash of the file's bytes and its suffix, so
reading an unchanged document again costs a hash and a file read, and a changed document
is never served stale. The caller chooses ``cache_dir`` and keeps it outside every
workspace tree (the workspace card passes ``internal_dir() / "cache"``).

Blocks: a first conversion takes from tens of milliseconds (XLSX, PPTX) to a second or
more (large PDFs).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from pathlib import Path, PurePath
from typing import Any

from toolcards.core._output import wrap_untrusted
from toolcards.errors import RetriableError, ToolFailed
from toolcards.fs._atomic_write import atomic_write
from toolcards.workspace._files import read_bytes
from toolcards.workspace._tree import format_size

__all__ = [
    "DOCUMENT_SUFFIXES",
    "MAX_DOCUMENT_BYTES",
    "TOO_LARGE_HINT",
    "convert_document",
    "document_markdown",
    "is_document",
]

DOCUMENT_SUFFIXES = frozenset({".pdf", ".docx", ".xlsx", ".pptx"})
"""File suffixes (lower case) that :func:`convert_document` accepts."""

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""Larger documents are not converted (the conversion holds all of it in memory)."""

TOO_LARGE_HINT = (
    f"Documents up to {format_size(MAX_DOCUMENT_BYTES)} are converted; split it or convert it with a command."
)
"""What a refusal of a larger document suggests."""

# Bump when the conversion changes, so cached Markdown from an older one is not reused.
_CACHE_VERSION = "1"

_converter: Any = None
_converter_lock = threading.Lock()


def is_document(path: PurePath) -> bool:
    """Whether ``path`` has a suffix of a convertible document (case-insensitive)."""
    return path.suffix.lower() in DOCUMENT_SUFFIXES


def convert_document(path: Path, cache_dir: Path, *, shown_as: str | None = None) -> str:
    """:func:`document_markdown` of the document file at ``path`` (a file of the host).

    Raises:
        RetriableError: the file is missing, a directory or not a regular file, larger
            than :data:`MAX_DOCUMENT_BYTES`, or as :func:`document_markdown`.
        ToolFailed: as :func:`document_markdown`.
    """
    name = shown_as or path.name
    _check_suffix(path.suffix, name)
    data = read_bytes(path, max_bytes=MAX_DOCUMENT_BYTES, too_large=TOO_LARGE_HINT)
    return document_markdown(data, path.suffix, cache_dir, shown_as=name)


def document_markdown(data: bytes, suffix: str, cache_dir: Path, *, shown_as: str) -> str:
    """The document ``data`` (of a file with ``suffix``, named ``shown_as`` in messages) as
    Markdown.

    Returns:
        The Markdown text; ``"(the document contains no extractable text)"`` when the
        conversion finds none (a scanned PDF, for instance).

    Raises:
        RetriableError: ``suffix`` is not in :data:`DOCUMENT_SUFFIXES`.
        ToolFailed: markitdown is not installed (the message gives the install command),
            or the file could not be converted (damaged, encrypted, mislabelled).
    """
    name = shown_as
    suffix = suffix.lower()
    _check_suffix(suffix, name)
    digest = hashlib.sha256(f"{_CACHE_VERSION}:{suffix}:".encode() + data).hexdigest()
    cached = cache_dir / "documents" / f"{digest}.md"
    try:
        return cached.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    markdown = _convert(data, suffix, name).strip()
    if not markdown:
        markdown = "(the document contains no extractable text)"
    # A cache that cannot be written only costs a conversion next time.
    with contextlib.suppress(OSError):
        atomic_write(cached, markdown.encode("utf-8"))
    return markdown


def _check_suffix(suffix: str, shown_as: str) -> None:
    if suffix.lower() not in DOCUMENT_SUFFIXES:
        kinds = ", ".join(sorted(DOCUMENT_SUFFIXES))
        raise RetriableError(f"{shown_as!r} is not a document that can be converted (supported: {kinds}).")


def _convert(data: bytes, suffix: str, name: str) -> str:
    import io
    import zipfile

    # markitdown falls back to reading unknown bytes as plain text, so a damaged or
    # mislabelled file would come back as noise: check the container first.
    valid = b"%PDF-" in data[:1024] if suffix == ".pdf" else zipfile.is_zipfile(io.BytesIO(data))
    if not valid:
        raise ToolFailed(
            f"Could not convert {name!r}: it is not a valid {suffix.lstrip('.').upper()} file "
            "(damaged, or another kind of file with this suffix)."
        )
    converter = _markitdown()
    from markitdown import StreamInfo

    try:
        result = converter.convert_stream(io.BytesIO(data), stream_info=StreamInfo(extension=suffix))
    except Exception as exc:
        # markitdown wraps each format's parser, whose errors have no common base class; their
        # messages may quote the document, so they are shown as its data.
        said = str(exc).strip()[:300] or "no reason given"
        raise ToolFailed(
            f"Could not convert {name!r} to text. The file may be damaged, encrypted or not really a "
            f"{suffix.lstrip('.').upper()} file. The converter said:\n{wrap_untrusted(said, 'the document converter')}"
        ) from exc
    return str(result.text_content or "")


def _markitdown() -> Any:
    global _converter
    with _converter_lock:
        if _converter is None:
            try:
                from markitdown import MarkItDown
            except ImportError as exc:
                raise ToolFailed(
                    "Reading PDF, DOCX, XLSX and PPTX documents needs markitdown, which is not installed: "
                    "pip install 'toolcards[docs]'."
                ) from exc
            _converter = MarkItDown(enable_plugins=False)
        return _converter
