"""Write ``src/toolcards/_tool_schemas.json``: the built-in capabilities' argument schemas.

Run after changing a built-in capability's signature or its docstring's ``Args:`` section
(``tests/core/test_shipped_schemas.py`` fails until then)::

    .venv/bin/python scripts/tool_schemas.py
"""

from __future__ import annotations

from pathlib import Path

from toolcards.core._shipped_schemas import SHIPPED_SCHEMAS_FILE, current_schemas, table_text

TARGET = Path(__file__).resolve().parents[1] / "src" / "toolcards" / SHIPPED_SCHEMAS_FILE


def main() -> None:
    schemas = current_schemas()
    TARGET.write_text(table_text(schemas), encoding="utf-8")
    print(f"wrote {len(schemas)} schemas to {TARGET}")


if __name__ == "__main__":
    main()
