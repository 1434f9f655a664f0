"""The docs site's build hook (``hooks:`` in ``mkdocs.yml``): generated reference sections.

A page line ``<!-- reference: NAME -->`` is replaced, at every build, by section ``NAME``
of ``scripts/config_reference.py``, written from the code itself (card classes,
``ServeConfig``, the task models, the argument parser), so the published reference cannot
drift from what the code accepts. An unknown name fails the build.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import config_reference  # found through the line above

MARKER = re.compile(r"^<!-- reference: ([a-z-]+) -->$", flags=re.M)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace every reference marker of a page with its generated section."""
    return MARKER.sub(lambda match: config_reference.section(match.group(1)), markdown)
