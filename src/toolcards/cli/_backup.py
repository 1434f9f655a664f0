"""``toolcards backup DEST``: copy the team's store while the team keeps working.

::

    toolcards backup state-backup.db                 # the team's store, wherever the lookup finds it
    toolcards backup --force state-backup.db         # replace an existing copy

The store is found by the lookup ``serve`` and ``call`` use (:mod:`toolcards.core._lookup`); a
SQLite store that does not exist there is an error naming every step, and ``--root`` with
``--store`` is a usage error. A SQLite store is copied online as one consistent snapshot of
everything acknowledged before the copy began, checked, flushed and put at DEST at once
(:mod:`toolcards.store._sqlite_backup`); DEST is one self-contained file, restored by pointing
``TOOLCARDS_STORE`` at it or, with the team stopped and the old ``-wal``/``-shm`` removed, put
in the store's place. An existing DEST is replaced only with ``--force`` (else exit 2). A
PostgreSQL store is not copied: the command prints the ``pg_dump`` to use (no password) and
exits 1, as for a ``:memory:`` store. It prints the file, its size and each namespace's version.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from toolcards.cli._console import UsageError, progress, summary
from toolcards.cli._location_options import (
    LOOKUP_HELP,
    add_location_options,
    apply_location_options,
    require_team_store,
)

__all__ = ["pg_dump_command", "register", "run"]


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``backup`` to the command line."""
    parser = subparsers.add_parser(
        "backup",
        parents=parents,
        help="copy the team's store to a file while the team runs (SQLite; pg_dump for PostgreSQL)",
        description=summary(__doc__),
        epilog=LOOKUP_HELP,
    )
    parser.add_argument("--force", action="store_true", help="replace DEST if it exists")
    add_location_options(parser)
    parser.add_argument("destination", metavar="DEST", type=Path, help="the file to write the copy to")
    parser.set_defaults(handler=run)


def pg_dump_command(url: str, destination: Path) -> str:
    """The ``pg_dump`` command backing up the PostgreSQL database at ``url`` into ``destination``.

    The password is never shown: it is left out of the URL and stands as ``***`` in
    ``PGPASSWORD`` (to be replaced, or dropped for ``~/.pgpass``).
    """
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    user, colon, _password = userinfo.partition(":")
    command = f"pg_dump --format=custom --file={shlex.quote(str(destination))} "
    if not (at and colon):
        return command + shlex.quote(url)
    safe_url = urlunsplit(parts._replace(netloc=f"{user}@{host}"))
    return "PGPASSWORD='***' " + command + shlex.quote(safe_url)


def run(args: argparse.Namespace) -> int:
    """Back the store up; returns 0 when the copy is in place.

    Raises:
        UsageError: ``--store`` with ``--root``; DEST is a directory or the store itself, lies in
            a directory that does not exist, or exists without ``--force``.
        toolcards.store.StoreError: the store is PostgreSQL (its ``pg_dump`` command is printed
            first) or ``:memory:``, missing, not a toolcards store, or the copy failed.
    """
    from toolcards.errors import StoreError
    from toolcards.store import MEMORY, backup_sqlite_store, describe_location, location_kind, sqlite_path
    from toolcards.store._sqlite_backup import destination_problem

    if args.store and args.root:
        raise UsageError(
            "--root names the store kept under a workspaces root, and --store names the store itself: give one of them."
        )
    lookup = apply_location_options(args)
    location = lookup.store
    kind = location_kind(location)
    destination = args.destination.expanduser().absolute()
    if kind == "postgresql":
        print(pg_dump_command(location, destination))
        raise StoreError(
            f"toolcards backup copies SQLite stores; {describe_location(location)} is a PostgreSQL database. "
            "Back it up with pg_dump, the command printed above: put the password in PGPASSWORD or ~/.pgpass "
            "(pg_restore puts the copy back)."
        )
    if kind == "memory":
        raise StoreError(
            f"The store is in memory ({MEMORY}): the team's state lives inside the process that serves it, and no "
            "other process can copy it. Keep a team you want to back up in a SQLite file or a PostgreSQL database."
        )
    require_team_store(lookup, command="backup")
    source = sqlite_path(location)
    problem = destination_problem(source, destination, overwrite=args.force)
    if problem is not None:
        raise UsageError(problem)
    progress(f"backing up {source} to {destination}")
    copied = backup_sqlite_store(source, destination, overwrite=args.force)
    count = len(copied.namespaces)
    print(
        f"Copied {copied.source} to {copied.destination}: {copied.size:,} bytes, "
        f"{count} namespace{'' if count == 1 else 's'}{':' if count else '.'}"
    )
    width = max((len(name) for name, _ in copied.namespaces), default=0)
    for name, version in copied.namespaces:
        print(f"  {name:<{width}}  version {version}")
    return 0
