"""Run every ```python block of the README and the docs, each alone, in a fresh interpreter.

    python scripts/run_doc_blocks.py                      # README.md and docs/**/*.md
    python scripts/run_doc_blocks.py docs/errors.md       # some files only
    python scripts/run_doc_blocks.py --forbid-source .    # fail if toolcards is not installed

Each block is a program of its own: it runs in a new interpreter (this one, or ``--python``),
from a new scratch directory, with ``TOOLCARDS_WORKSPACES_ROOT`` and ``TOOLCARDS_STORE``
pointing into it and no API key in its environment, so a block can rely on nothing another
block did and reaches no network service. The block is written to a file named after its
page with as many blank lines before it as precede it there, so a traceback names the page
and the page's own line.

A block that cannot run here says so in the line just above its fence,
``<!-- no-run: needs a Docker daemon -->``; it is counted and reported, never run.

Prints one line per block (``ok``, ``FAILED`` or ``no-run``) and, for each failure, the
block's output; exits 1 if any block failed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)
NO_RUN = re.compile(r"<!--\s*no-run:\s*(.*?)\s*-->\s*\n$")
DROPPED_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "TAVILY_API_KEY", "PYTHONPATH", "PYTHONHOME")
TIMEOUT_S = 300


@dataclass(frozen=True, kw_only=True)
class Block:
    """One ```python block of a page."""

    page: str
    """The page's path relative to the repository, e.g. ``docs/errors.md``."""
    line: int
    """The line of the opening fence, from 1."""
    code: str
    no_run: str | None = None
    """Why the block is not run, from its ``<!-- no-run: ... -->`` line; ``None``: it runs."""

    @property
    def where(self) -> str:
        """``page:line``, as a test id and in every message."""
        return f"{self.page}:{self.line}"

    def script(self) -> str:
        """The code, after as many blank lines as precede it on its page."""
        return "\n" * self.line + self.code


def pages(repo: Path = REPO) -> list[Path]:
    """The README and every page under ``docs/``, in a stable order."""
    return [repo / "README.md", *sorted((repo / "docs").rglob("*.md"))]


def blocks_of(text: str, page: str) -> list[Block]:
    """Every ```python block of ``text``, with its line and its no-run reason, if any."""
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()]
        reason = NO_RUN.search(before[-300:])
        found.append(
            Block(
                page=page,
                line=before.count("\n") + 1,
                code=match.group(1),
                no_run=reason.group(1) if reason else None,
            )
        )
    return found


def all_blocks(paths: list[Path] | None = None, repo: Path = REPO) -> list[Block]:
    """The blocks of ``paths`` (default: :func:`pages`), page by page."""
    found = []
    for path in paths or pages(repo):
        resolved = path.resolve()
        page = str(resolved.relative_to(repo)) if resolved.is_relative_to(repo) else str(path)
        found += blocks_of(resolved.read_text(encoding="utf-8"), page)
    return found


def environment(scratch: Path) -> dict[str, str]:
    """This process's environment for a block: no API keys, state inside ``scratch``."""
    env = {key: value for key, value in os.environ.items() if key not in DROPPED_ENV}
    env.update(
        TOOLCARDS_WORKSPACES_ROOT=str(scratch / "workspaces"),
        TOOLCARDS_STORE=str(scratch / "state.db"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def run(block: Block, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    """Run ``block`` alone in a fresh interpreter and scratch directory (removed afterwards)."""
    scratch = Path(tempfile.mkdtemp(prefix="toolcards-block-"))
    try:
        script = scratch / "pages" / block.page
        script.parent.mkdir(parents=True)
        script.write_text(block.script(), encoding="utf-8")
        work = scratch / "run"
        work.mkdir()
        try:
            return subprocess.run(
                [python, str(script)],
                cwd=work,
                env=environment(scratch),
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            output = exc.output if isinstance(exc.output, str) else ""
            return subprocess.CompletedProcess(exc.cmd, -1, output, f"timed out after {TIMEOUT_S} s")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def failure_report(block: Block, result: subprocess.CompletedProcess[str]) -> str:
    """What a failed block printed, under the page and line it comes from."""
    output = (result.stdout + result.stderr).rstrip() or "(no output)"
    return f"{block.where}: the block exited {result.returncode}\n{output}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("pages", nargs="*", type=Path, help="pages to run (default: README.md and docs/**/*.md)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run the blocks with")
    parser.add_argument("--forbid-source", type=Path, metavar="DIR", help="fail if toolcards comes from under DIR")
    args = parser.parse_args(argv)

    where = subprocess.run(
        [args.python, "-c", "import pathlib, toolcards; print(pathlib.Path(toolcards.__file__).resolve().parent)"],
        capture_output=True,
        text=True,
        check=False,
    )
    if where.returncode != 0:
        print(f"error: {args.python} cannot import toolcards:\n{where.stderr}", file=sys.stderr)
        return 1
    origin = Path(where.stdout.strip())
    print(f"toolcards imported from {origin}", flush=True)
    if args.forbid_source is not None and origin.is_relative_to(args.forbid_source.resolve()):
        print(f"error: toolcards came from the source tree {args.forbid_source}, not an install", file=sys.stderr)
        return 1
    blocks = all_blocks(args.pages or None)
    if not blocks:
        print("error: no ```python blocks found", file=sys.stderr)
        return 1
    failures, skipped = [], []
    for block in blocks:
        first = next((text for text in block.code.splitlines() if text.strip()), "")
        if block.no_run is not None:
            skipped.append(block)
            print(f"{block.where}: no-run ({block.no_run})", flush=True)
            continue
        result = run(block, args.python)
        if result.returncode != 0:
            failures.append(block)
            print(f"{block.where}: FAILED\n{failure_report(block, result)}", flush=True)
        else:
            print(f"{block.where}: ok  {first[:70]}", flush=True)
    ran = len(blocks) - len(skipped)
    print(f"{ran - len(failures)} of {ran} blocks ran ok, {len(skipped)} marked no-run", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
