"""What the workspace shows a person: the tree as data, a file's preview, an image's bytes.

These back the workspace card's views (:mod:`toolcards.core._views`), which the dashboard
shows. They read only, and only through :class:`~toolcards.workspace._tree.Tree`: every
path is walked from the root's handle, links are never followed while walking the tree
(listed as links), and only regular files are opened, without blocking on a named pipe.
Everything is bounded: the tree lists at most :data:`MAX_TREE_ENTRIES` entries, a text
preview keeps :data:`PREVIEW_TEXT_BYTES`, an image is served up to
:data:`PREVIEW_IMAGE_BYTES`. A file's kind comes from its content (the first bytes of PNG,
JPEG, GIF and WebP), never from its name alone: a ``.png`` holding HTML is shown as text.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from typing import Any

from toolcards.core._views import FileBytes
from toolcards.errors import RetriableError, ToolFailed
from toolcards.workspace._paths import SKIPPED_DIRS
from toolcards.workspace._tree import Directory, Entry, Tree

__all__ = [
    "MAX_TREE_ENTRIES",
    "PREVIEW_IMAGE_BYTES",
    "PREVIEW_TEXT_BYTES",
    "SIGNATURE_ENTRIES",
    "image_bytes",
    "image_type",
    "preview_file",
    "tree_listing",
    "tree_signature",
]

MAX_TREE_ENTRIES = 2_000
"""Entries :func:`tree_listing` returns at most (the rest is counted as cut)."""
SIGNATURE_ENTRIES = 10_000
"""Entries :func:`tree_signature` looks at; a change past them goes unnoticed."""
PREVIEW_TEXT_BYTES = 256 * 1024
"""Bytes of a text file a preview shows at most."""
PREVIEW_IMAGE_BYTES = 8 * 1024 * 1024
"""Largest image served whole."""
_SNIFF_BYTES = 8 * 1024

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_type(head: bytes) -> str | None:
    """The media type of an image starting with ``head`` (PNG, JPEG, GIF, WebP), else ``None``."""
    for magic, media_type in _MAGIC:
        if head.startswith(magic):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _kind(entry: Entry) -> str:
    if entry.kind == stat.S_IFDIR:
        return "dir"
    if entry.kind == stat.S_IFREG:
        return "file"
    if entry.kind == stat.S_IFLNK:
        return "link"
    return "special"


def _walk(directory: Directory, budget: list[int]) -> Iterator[tuple[str, Entry, os.stat_result | None]]:
    """Depth first, directories before files, each by name; never through a link."""
    try:
        entries, _ = directory.entries()
    except (RetriableError, ToolFailed):
        return
    entries.sort(key=lambda e: (not e.is_directory, e.name.casefold(), e.name))
    for entry in entries:
        if budget[0] <= 0:
            return
        budget[0] -= 1
        try:
            status: os.stat_result | None = os.stat(entry.name, dir_fd=directory.fd, follow_symlinks=False)
        except OSError:
            status = None
        yield directory.child_rel(entry.name), entry, status
        if entry.is_directory and entry.name not in SKIPPED_DIRS:
            try:
                child = directory.child(entry.name)
            except (RetriableError, ToolFailed):
                continue
            with child:
                yield from _walk(child, budget)


def tree_listing(tree: Tree, limit: int = MAX_TREE_ENTRIES) -> dict[str, Any]:
    """The tree as ``{"entries": [{"path", "kind", "size"}], "truncated"}``, depth first.

    ``kind`` is ``dir``, ``file``, ``link`` (not followed) or ``special`` (a named pipe, a
    socket, a device); the contents of skipped directories (``.git``...) are not listed.
    """
    budget = [limit + 1]  # one more than shown, to know whether the listing was cut
    entries: list[dict[str, Any]] = []
    with tree.directory("") as root:
        for rel, entry, status in _walk(root, budget):
            kind = _kind(entry)
            item: dict[str, Any] = {"path": rel, "kind": kind}
            if kind == "file" and status is not None:
                item["size"] = status.st_size
            if entry.is_directory and entry.name in SKIPPED_DIRS:
                item["skipped"] = True
            entries.append(item)
    return {"entries": entries[:limit], "truncated": len(entries) > limit}


def tree_signature(tree: Tree, limit: int = SIGNATURE_ENTRIES) -> str:
    """A digest of the first ``limit`` entries' names, kinds, sizes and modification times.

    It changes when a file is created, deleted, renamed or written, by a tool, a command or
    another process. Costs one ``stat`` per entry.
    """
    hasher = hashlib.blake2b(digest_size=12)
    try:
        with tree.directory("") as root:
            for rel, entry, status in _walk(root, [limit]):
                stamp = (status.st_size, status.st_mtime_ns, status.st_ino) if status is not None else ()
                hasher.update(f"{rel}\0{entry.kind}\0{stamp}\n".encode("utf-8", "surrogateescape"))
    except (RetriableError, ToolFailed) as exc:
        hasher.update(str(exc).encode())
    return hasher.hexdigest()


def preview_file(tree: Tree, path: str) -> dict[str, Any]:
    """What a preview of ``path`` shows: ``{"path", "size", "kind", ...}``.

    ``kind`` is ``text`` (with ``text``, decoded as UTF-8 with replacement characters, and
    ``truncated``), ``image`` (with ``media_type``, when it is at most
    :data:`PREVIEW_IMAGE_BYTES`) or ``binary``.

    Raises:
        RetriableError: the path leaves the tree, nothing regular is there (a directory, a
            named pipe, a link that leaves the tree), or it changed while being read.
        ToolFailed: it cannot be read.
    """
    with tree.open_file(path) as file:
        size = file.size
        kept = bytearray()
        for block in file.chunks():
            kept += block
            if len(kept) > PREVIEW_TEXT_BYTES:
                break
        rel = file.rel
    head = bytes(kept[:_SNIFF_BYTES])
    media_type = image_type(head)
    if media_type is not None and size <= PREVIEW_IMAGE_BYTES:
        return {"path": rel, "size": size, "kind": "image", "media_type": media_type}
    if b"\x00" in head:
        return {"path": rel, "size": size, "kind": "binary"}
    truncated = len(kept) > PREVIEW_TEXT_BYTES or size > PREVIEW_TEXT_BYTES
    text = bytes(kept[:PREVIEW_TEXT_BYTES]).decode("utf-8", errors="replace")
    return {"path": rel, "size": size, "kind": "text", "text": text, "truncated": truncated}


def image_bytes(tree: Tree, path: str) -> FileBytes:
    """The image at ``path`` as it is, with its media type read from its content.

    Raises:
        RetriableError: as :func:`preview_file`; or it is not a PNG, JPEG, GIF or WebP
            image, or larger than :data:`PREVIEW_IMAGE_BYTES`.
    """
    with tree.open_file(path) as file:
        data = file.read_all(PREVIEW_IMAGE_BYTES, too_large="It is too large to preview.")
        rel = file.rel
    media_type = image_type(data[:_SNIFF_BYTES])
    if media_type is None:
        raise RetriableError(f"{rel!r} is not a PNG, JPEG, GIF or WebP image.")
    return FileBytes(media_type=media_type, data=data)
