"""``toolcards info``: where the team lives, what its store holds, and which versions run.

::

    toolcards info                  # from any directory of the project
    toolcards info --json           # the same, for scripts

Prints where (the store and the workspaces root, each with the lookup step that chose it and
every step looked at: :mod:`toolcards.core._lookup`), what (each team in the store and its
namespaces, with their versions and rows per collection, from
:meth:`toolcards.store.Store.namespaces`) and the versions of toolcards, Python, SQLite, the
dependencies and each extra. Nothing is created: a SQLite store that does not exist is
reported with the rest, then the command exits 1 with the error every reading command gives.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TYPE_CHECKING, Any

from toolcards.cli._console import summary
from toolcards.cli._location_options import (
    LOOKUP_HELP,
    add_location_options,
    apply_location_options,
    require_team_store,
)

if TYPE_CHECKING:
    from toolcards.core._lookup import Lookup

__all__ = ["gather", "package_versions", "register", "run"]


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``info`` to the command line."""
    parser = subparsers.add_parser(
        "info",
        parents=parents,
        help="where the team lives, what it holds, and the versions installed",
        description=summary(__doc__),
        epilog=LOOKUP_HELP,
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_location_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the report; returns 0, or raises after printing it when there is no store.

    Raises:
        StoreError: the store does not exist (after the report is printed), or cannot be read.
        WiringError: the lookup failed (an unreadable ``toolcards.toml``, no home directory).
    """
    lookup = apply_location_options(args)
    report = gather(lookup)
    if args.json:
        json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(_text(report))
    sys.stdout.flush()
    require_team_store(lookup, command="info")
    return 0


def gather(lookup: Lookup) -> dict[str, Any]:
    """The report as JSON data: ``toolcards``, ``python``, ``sqlite``, ``store``, ``root``,
    ``lookup``, ``project_file``, ``teams``, ``packages`` and ``extras``.

    ``teams`` maps each team to its namespaces (``{"#PlanningTool": {"version": 3, "rows":
    {"tasks": 2, ...}}}``); it is empty when the store does not exist.

    Raises:
        StoreError: the store exists but cannot be read.
    """
    import platform
    import sqlite3

    import toolcards
    from toolcards.core._lookup import default_store_of, find_config
    from toolcards.store import describe_location, location_kind

    store_file = lookup.store_file
    exists = store_file.is_file() if store_file is not None else True
    project = find_config()
    return {
        "toolcards": toolcards.__version__,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "store": {
            "location": describe_location(lookup.store),
            "kind": location_kind(lookup.store),
            "exists": exists,
            "step": lookup.store_step.value,
            "chosen_by": lookup.chosen_by(lookup.store_step),
            "under_root": lookup.store == default_store_of(lookup.root),
        },
        "root": {
            "path": str(lookup.root),
            "exists": lookup.root.is_dir(),
            "step": lookup.root_step.value,
            "chosen_by": lookup.chosen_by(lookup.root_step),
        },
        "lookup": [{"step": step.value, "found": found} for step, found in lookup.trail],
        # Found even when an earlier step decided: a toolcards.toml that is not used is worth knowing about.
        "project_file": None if project is None else {"path": str(project), "used": project == lookup.config},
        "teams": _teams(lookup.store) if exists else {},
        **package_versions(),
    }


def package_versions() -> dict[str, Any]:
    """``{"packages": {name: version or None}, "extras": {extra: {"installed": bool,
    "packages": {name: version or None}}}}``: what toolcards requires, from its own package
    metadata, so every extra it declares is listed."""
    from importlib.metadata import PackageNotFoundError, metadata, version

    def installed(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    try:
        meta = metadata("toolcards")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return {"packages": {}, "extras": {}}
    core: dict[str, str | None] = {}
    extras: dict[str, dict[str, str | None]] = {name: {} for name in meta.get_all("Provides-Extra") or ()}
    includes: dict[str, list[str]] = {}
    for requirement in meta.get_all("Requires-Dist") or ():
        spec, _, marker = requirement.partition(";")
        name_match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[([^\]]*)\])?", spec)
        if name_match is None:
            continue
        name, wanted = name_match[1], name_match[2]
        extra_match = re.search(r"extra\s*==\s*[\"']([^\"']+)[\"']", marker)
        if extra_match is None:
            core[name] = installed(name)
        elif name == "toolcards":  # "all" is made of the other extras
            includes.setdefault(extra_match[1], []).extend(part.strip() for part in (wanted or "").split(","))
        else:
            extras.setdefault(extra_match[1], {})[name] = installed(name)
    for extra, parts in includes.items():
        for part in parts:
            extras.setdefault(extra, {}).update(extras.get(part, {}))
    return {
        "packages": core,
        "extras": {
            name: {"installed": all(v is not None for v in packages.values()), "packages": packages}
            for name, packages in extras.items()
        },
    }


def _teams(location: str) -> dict[str, dict[str, Any]]:
    from toolcards.store import open_store

    store = open_store(location)
    try:
        summaries = store.namespaces()
    finally:
        store.close()
    teams: dict[str, dict[str, Any]] = {}
    for entry in summaries:
        # Actor names carry no "/" (a team id may): the last one separates them.
        team, _, actor = entry.namespace.rpartition("/")
        teams.setdefault(team, {})[actor] = {"version": entry.version, "rows": entry.rows}
    return teams


def _text(report: dict[str, Any]) -> str:
    from toolcards.store._journal import EVENTS_NAMESPACE

    store, root = report["store"], report["root"]
    lines = [f"toolcards {report['toolcards']} (Python {report['python']}, SQLite {report['sqlite']})", ""]
    where = f"{store['kind']}" + ("" if store["exists"] else ", does not exist")
    under = " (kept under the root)" if store["under_root"] else ""
    lines += [f"store  {store['location']} ({where})", f"       chosen by {store['chosen_by']}{under}"]
    lines += [f"root   {root['path']}" + ("" if root["exists"] else " (not made yet)")]
    lines += [f"       chosen by {root['chosen_by']}", "", "lookup"]
    lines += [f"  {index}. {entry['found']}" for index, entry in enumerate(report["lookup"], 1)]
    project = report["project_file"]
    if project is not None and not project["used"]:
        lines += [f"  ({project['path']} is not used: an earlier step decided)"]
    lines += ["", "teams"]
    if not report["teams"]:
        lines += ["  none" if store["exists"] else "  none: there is no store"]
    for team, namespaces in sorted(report["teams"].items()):
        lines += [f"  {team}"]
        width = max(len(name) for name in namespaces)
        for name, entry in sorted(namespaces.items()):
            rows = ", ".join(f"{collection} {count}" for collection, count in entry["rows"].items()) or "no rows"
            head = " (the event log: its last event)" if name == EVENTS_NAMESPACE else ""
            lines += [f"    {name:<{width}}  version {entry['version']}{head}: {rows}"]
    lines += ["", "packages"]
    lines += ["  " + ", ".join(f"{name} {ver or 'missing'}" for name, ver in report["packages"].items())]
    lines += ["", "extras (pip install 'toolcards[<extra>]')"]
    width = max((len(name) for name in report["extras"]), default=0)
    for name, extra in report["extras"].items():
        missing = [package for package, ver in extra["packages"].items() if ver is None]
        state = "installed" if not missing else f"missing {', '.join(missing)}"
        lines += [f"  {name:<{width}}  {state}"]
    return "\n".join(lines) + "\n"
