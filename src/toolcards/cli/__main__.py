"""``python -m toolcards.cli``: the same as the ``toolcards`` command."""

from __future__ import annotations

from toolcards.cli import main

__all__: list[str] = []

raise SystemExit(main())
