"""Office documents and PDFs as Markdown: :func:`convert_document`.

PDF, DOCX, XLSX and PPTX files are converted with markitdown (the ``docs`` extra),
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
from pathlib import Path
from typing import Any

from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace.files import atomic_write, read_bytes

__all__ = ["DOCUMENT_SUFFIXES", "convert_document", "is_document"]

DOCUMENT_SUFFIXES = frozenset({".pdf", ".docx", ".xlsx", ".pptx"})
"""File suffixes (lower case) that :func:`convert_document` accepts."""

# Bump when the conversion changes, so cached Markdown from an older one is not reused.
_CACHE_VERSION = "1"

_converter: Any = None
_converter_lock = threading.Lock()


def is_document(path: Path) -> bool:
    """Whether ``path`` has a suffix of a convertible document (case-insensitive)."""
    return path.suffix.lower() in DOCUMENT_SUFFIXES


def convert_document(path: Path, cache_dir: Path, *, shown_as: str | None = None) -> str:
    """The content of the document at ``path`` as Markdown.

    Returns:
        The Markdown text; ``"(the document contains no extractable text)"`` when the
        conversion finds none (a scanned PDF, for instance).

    Raises:
        RetriableError: the file is missing or a directory, or its suffix is not in
            :data:`DOCUMENT_SUFFIXES`.
        ToolFailed: markitdown is not installed (the message gives the install command),
            or the file could not be converted (damaged, encrypted, mislabelled).
    """
    name = shown_as or str(path)
    suffix = path.suffix.lower()
    if suffix not in DOCUMENT_SUFFIXES:
        kinds = ", ".join(sorted(DOCUMENT_SUFFIXES))
        raise RetriableError(f"{name!r} is not a document that can be converted (supported: {kinds}).")
    data = read_bytes(path, shown_as=name)
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
    with contextlib.suppress(RetriableError, ToolFailed):
        atomic_write(cached, markdown.encode("utf-8"))
    return markdown


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
        # markitdown wraps each format's parser, whose errors have no common base class.
        raise ToolFailed(
            f"Could not convert {name!r} to text ({type(exc).__name__}: {exc}). "
            "The file may be damaged, encrypted or not really a " + suffix.lstrip(".").upper() + " file."
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
