"""The workspace's data: what a model sends for a multi-file edit, and what the write gate
remembers about each agent's reads.

* :class:`FileEdit` — one find-and-replace of ``workspace_multi_edit``, as the model writes it.
* :class:`ReadRecord` — what one agent last read of one file: the hash of the bytes it
  read and whether it saw the whole file.
* :func:`content_digest` — the hash both are compared with.

Plain pydantic data and one hash function: nothing here imports pykka or touches the disk.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["FileEdit", "ReadRecord", "content_digest"]


def content_digest(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 hex characters: how the gate tells two versions apart."""
    return hashlib.sha256(data).hexdigest()


def _without_description(schema: dict[str, Any]) -> None:
    # pydantic puts a model's docstring in its JSON schema; a model pays for every word of a
    # schema on every request, and the tool's own description already says what this is.
    schema.pop("description", None)


class FileEdit(BaseModel):
    """One find-and-replace in ``workspace_multi_edit``: in ``path``, replace ``old_string``
    by ``new_string`` (every occurrence with ``replace_all``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_without_description)

    path: str
    old_string: str = Field(description="Unique unless replace_all.")
    new_string: str
    replace_all: bool = False


class ReadRecord(BaseModel):
    """What one agent last read of one file (or last wrote to it, which counts as reading)."""

    model_config = ConfigDict(frozen=True)

    digest: str
    """:func:`content_digest` of the file bytes the agent read or wrote."""
    full: bool
    """The agent saw the whole file; a page read (an ``offset``/``limit`` that did not reach
    every line, or output cut to its budget) licenses anchored edits, not overwrites."""
