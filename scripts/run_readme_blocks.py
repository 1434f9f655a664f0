"""Run every ```python block of a README, in order, in one namespace, against the installed toolcards.

    python scripts/run_readme_blocks.py README.md

Prints where ``toolcards`` was imported from, then one line per block (its number and first
line in the README), and exits 1 at the first block that raises, with its traceback. Run it
with an interpreter whose toolcards is the one to check (``scripts/wheel_check.py`` uses the
venv it installed the wheel into) and from a scratch directory: the samples write a
``workspaces`` folder where they run. ``--forbid-source DIR`` fails if toolcards was
imported from under ``DIR`` (a source tree) rather than from an installed package.
"""

from __future__ import annotations

import argparse
import re
import sys
import traceback
import types
from pathlib import Path

BLOCK = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The README's Python blocks as ``(line of the opening fence, code)``."""
    return [(text.count("\n", 0, match.start()) + 1, match.group(1)) for match in BLOCK.finditer(text)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("readme", type=Path)
    parser.add_argument("--forbid-source", type=Path, metavar="DIR", help="fail if toolcards comes from under DIR")
    args = parser.parse_args(argv)

    import importlib.metadata

    import toolcards

    origin = Path(toolcards.__file__).resolve().parent
    print(f"toolcards {importlib.metadata.version('toolcards')} imported from {origin}", flush=True)
    if args.forbid_source is not None and origin.is_relative_to(args.forbid_source.resolve()):
        print(f"error: toolcards came from the source tree {args.forbid_source}, not an install", file=sys.stderr)
        return 1
    blocks = python_blocks(args.readme.read_text(encoding="utf-8"))
    if not blocks:
        print(f"error: {args.readme} has no ```python blocks", file=sys.stderr)
        return 1
    # A real module, so pydantic can resolve the samples' annotations.
    module = types.ModuleType("readme_samples")
    sys.modules[module.__name__] = module
    for number, (line, code) in enumerate(blocks, start=1):
        first = next((text for text in code.splitlines() if text.strip()), "")
        try:
            exec(compile(code, f"{args.readme.name}:{line}", "exec"), module.__dict__)
        except Exception:
            print(f"README block {number}/{len(blocks)} (line {line}): FAILED", flush=True)
            traceback.print_exc()
            return 1
        print(f"README block {number}/{len(blocks)} (line {line}): ok  {first[:70]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
