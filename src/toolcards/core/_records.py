"""``Records``: a tool's text answer that also carries the records it was written from.

A tool that finds things (search hits, listings) answers a model in compact text, and a
client that reads structured results (MCP's ``structuredContent``, checked against the
tool's ``outputSchema``) wants the records themselves. Returning :class:`Records` gives
both: it *is* the text (a ``str``: every channel and the pipeline's budget treat it as the
text), and its :attr:`~Records.records` are the data the MCP server sends as
``structuredContent``. Declare their JSON schema on the capability
(``ToolHints(output_schema=...)``).

The records are bounded by the tool (a search's own limit), not by the output budget: when
the budget cuts the text, the records pass unchanged. A tool with ``untrusted_output`` gets
its text only: the untrusted-output envelope protects text, not records.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Records"]


class Records(str):
    """Text for a model, with the records it was rendered from (see the module docstring)."""

    records: dict[str, Any]
    """JSON-ready data, conforming to the capability's ``output_schema``."""

    def __new__(cls, text: str, records: dict[str, Any]) -> Records:
        made = super().__new__(cls, text)
        made.records = records
        return made

    def with_text(self, text: str) -> Records:
        """The same records with other text (the budget's cut, an envelope)."""
        return Records(text, self.records)
