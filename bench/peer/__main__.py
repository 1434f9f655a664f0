"""``python -m bench.peer``: toolcards and akgentic-tool 1.12.0 side by side on this machine.

Run by hand from the repository root, with the project's venv (``.venv/bin/python -m
bench.peer``); never part of ``make test`` or a plain ``python -m bench``. It:

1. finds a Python >= 3.12 (akgentic-tool 1.12.0 requires it): ``$TOOLCARDS_PEER_PYTHON``,
   then ``python3.13`` / ``python3.12`` on ``PATH``, pyenv's versions, then ``uv python find``. Without one it
   says so and exits with status 2: ``uv python install`` downloads interpreters from
   outside the package registries, which a machine without that access cannot do;
2. makes a separate venv for the peer (``$TOOLCARDS_PEER_VENV``, default
   ``~/.cache/toolcards-bench/akgentic-tool-1.12.0``) and installs
   ``akgentic-tool[vector_search]==1.12.0`` from PyPI into it (``uv`` when the project's venv
   has it, else pip); if that fails it says why and exits with status 2. Nothing of the
   peer's code is copied into this repository: it is driven through its public API by
   ``bench/peer/akgentic_driver.py``, run inside that venv;
3. runs each suite (planning, graph, workspace, misc) in a fresh process per side, the two
   sides taking turns (which goes first alternates), for ``--rounds`` rounds (3); each side
   gets its own temporary directory, and both find the same ``rg`` first on ``PATH``;
4. measures import time (``python -c`` of the package and its planning, graph and
   workspace cards, minus ``python -c pass`` of the same interpreter) and peak memory
   (``ru_maxrss`` of a process that binds those three cards and calls each once);
5. prints one table: the peer's median, ours, ``ratio = peer / ours`` (above 1: toolcards
   is faster or smaller), and whether the ratio reaches issue 19's 1.5.

The two sides run on different interpreters (ours on the project's venv, the peer on
Python >= 3.12); the table's header names both. Medians pool every round's samples.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PEER = "akgentic-tool"
VERSION = "1.12.0"
REQUIREMENT = f"{PEER}[vector_search]=={VERSION}"
SUITES = ("planning", "graph", "workspace", "misc")
GOAL = 1.5
"""Issue 19: every shared operation at least 1.5x faster than the peer's."""
IMPORT_RUNS = 5
SUITE_TIMEOUT_S = 1800

IMPORTS = {
    "toolcards": (
        "from toolcards import ToolFactory\n"
        "from toolcards.planning import PlanningTool\n"
        "from toolcards.knowledge_graph import KnowledgeGraphTool\n"
        "from toolcards.workspace import WorkspaceTool\n"
    ),
    PEER: (
        "from akgentic.tool.core.factory import ToolFactory\n"
        "from akgentic.tool.planning.planning import PlanningTool\n"
        "from akgentic.tool.knowledge_graph import KnowledgeGraphTool\n"
        "from akgentic.tool.workspace import WorkspaceTool\n"
    ),
}

MEMORY = {
    "toolcards": """
import os, resource, sys, tempfile
root = tempfile.mkdtemp()
os.environ["TOOLCARDS_WORKSPACES_ROOT"] = root
os.environ["TOOLCARDS_STORE"] = os.path.join(root, "state.db")
from toolcards import ToolFactory
from toolcards.knowledge_graph import KnowledgeGraphTool
from toolcards.planning import PlanningTool
from toolcards.testing import FakeObserver
from toolcards.workspace import WorkspaceTool
with FakeObserver("Agent1", "memory") as agent:
    cards = [PlanningTool(), KnowledgeGraphTool(), WorkspaceTool()]
    tools = {t.name: t for t in ToolFactory(cards, observer=agent).tools()}
    tools["update_planning"].call_sync({"create_tasks": [{"description": "one task"}]})
    tools["update_graph"].call_sync({"create_entities": [{"name": "one", "entity_type": "thing"}]})
    tools["workspace_write"].call_sync({"path": "one.txt", "content": "one"})
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
""",
    PEER: """
import os, resource, sys, tempfile, uuid
os.environ["AKGENTIC_WORKSPACES_ROOT"] = tempfile.mkdtemp()
sys.path.insert(0, sys.argv[1])
from akgentic_driver import Team
from akgentic.tool.core.factory import ToolFactory
from akgentic.tool.knowledge_graph import KnowledgeGraphTool
from akgentic.tool.knowledge_graph.models import EntityCreate, ManageGraph
from akgentic.tool.planning.planning import PlanningTool
from akgentic.tool.planning.planning_actor import TaskCreate, UpdatePlan
from akgentic.tool.workspace import WorkspaceTool
team = Team()
try:
    cards = [PlanningTool(vector_store=False), KnowledgeGraphTool(vector_store=False)]
    cards.append(WorkspaceTool(workspace_id="memory"))
    tools = {t.__name__: t for t in ToolFactory(cards, observer=team.agent()).get_tools()}
    task = TaskCreate(id=1, description="one task", owner="", status="pending")
    tools["update_planning"](UpdatePlan(create_tasks=[task]))
    tools["update_graph"](ManageGraph(create_entities=[EntityCreate(name="one", entity_type="thing", description="")]))
    tools["workspace_write"](path="one.txt", content="one")
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)
finally:
    team.close()
""",
}


class CannotRun(Exception):
    """The comparison cannot run on this machine; the message says why and what would fix it."""


# -- the peer's environment -----------------------------------------------------------------


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    major, minor = done.stdout.split()
    return int(major), int(minor)


def _uv() -> str | None:
    beside = Path(sys.executable).with_name("uv")
    return str(beside) if beside.exists() else shutil.which("uv")


def find_python() -> str:
    """A Python >= 3.12 for the peer, or :class:`CannotRun`."""
    candidates = [os.environ.get("TOOLCARDS_PEER_PYTHON"), shutil.which("python3.13"), shutil.which("python3.12")]
    # pyenv's interpreters, which its shims only run when selected.
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += [str(p) for p in sorted(pyenv.glob("3.*/bin/python3"), reverse=True)]
    uv = _uv()
    if uv is not None:
        with_uv = subprocess.run([uv, "python", "find", ">=3.12"], capture_output=True, text=True, check=False)
        if with_uv.returncode == 0:
            candidates.append(with_uv.stdout.strip())
    for python in filter(None, candidates):
        version = _version_of(python)
        if version is not None and version >= (3, 12):
            return python
    raise CannotRun(
        f"no Python >= 3.12 found ({PEER} {VERSION} requires it): tried $TOOLCARDS_PEER_PYTHON, python3.13 and "
        "python3.12 on PATH, pyenv's versions and `uv python find`. `uv python install 3.12` downloads the "
        "interpreter from GitHub, which a machine reaching only the package registries cannot do; install one by "
        "other means (a system package, pyenv) and point TOOLCARDS_PEER_PYTHON at it."
    )


def peer_venv(python: str) -> Path:
    """The peer's venv with akgentic-tool installed, made on first use; or :class:`CannotRun`."""
    default = Path.home() / ".cache" / "toolcards-bench" / f"{PEER}-{VERSION}"
    venv = Path(os.environ.get("TOOLCARDS_PEER_VENV", default))
    interpreter = venv / "bin" / "python"
    check = [str(interpreter), "-c", f"import importlib.metadata as m; assert m.version('{PEER}') == '{VERSION}'"]
    if interpreter.exists() and subprocess.run(check, capture_output=True, check=False).returncode == 0:
        return venv
    print(f"making {venv} with {python} and installing {REQUIREMENT} ...", file=sys.stderr, flush=True)
    uv = _uv()
    if uv is not None:
        steps = [
            [uv, "venv", "--quiet", "--python", python, str(venv)],
            [uv, "pip", "install", "--quiet", "--python", str(interpreter), REQUIREMENT],
        ]
    else:
        steps = [
            [python, "-m", "venv", str(venv)],
            [str(interpreter), "-m", "pip", "install", "--quiet", REQUIREMENT],
        ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = " ".join((done.stderr or done.stdout).split())[-600:]
            raise CannotRun(f"`{' '.join(step)}` failed (exit {done.returncode}): {tail}")
    if subprocess.run(check, capture_output=True, check=False).returncode != 0:
        raise CannotRun(f"{REQUIREMENT} did not install into {venv}")
    return venv


def _same_rg(directory: Path) -> dict[str, str]:
    """An environment whose PATH starts with a directory holding toolcards' ``rg``: both sides grep with it."""
    from toolcards.workspace._grep import find_rg

    rg = find_rg()
    if rg is None:
        return {}
    (directory / "rg").symlink_to(rg)
    return {"PATH": f"{directory}{os.pathsep}{os.environ.get('PATH', '')}"}


# -- running the suites --------------------------------------------------------------------


def _run_suite(python: str, driver: str, suite: str, environment: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"peer-{suite}-") as work:
        started = time.perf_counter()
        done = subprocess.run(
            [python, str(HERE / driver), suite, work],
            cwd=REPO,
            env={**os.environ, **environment},
            capture_output=True,
            text=True,
            timeout=SUITE_TIMEOUT_S,
            check=False,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        if done.returncode != 0 or not lines:
            tail = " | ".join(done.stderr.strip().splitlines()[-5:])
            raise RuntimeError(f"{driver} {suite} failed (exit {done.returncode}): {tail[-800:]}")
        print(f"    {driver} {suite}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
        return result


def _import_times(pythons: dict[str, str], rounds: int) -> dict[str, list[float]]:
    """Milliseconds to import each side's package and cards, over a bare start of the same interpreter."""
    samples: dict[str, list[float]] = {side: [] for side in pythons}
    bare: dict[str, list[float]] = {side: [] for side in pythons}

    def timed(python: str, code: str) -> float:
        started = time.perf_counter()
        subprocess.run([python, "-c", code], cwd=REPO, check=True, capture_output=True)
        return (time.perf_counter() - started) * 1000

    for side, python in pythons.items():  # warm-up: bytecode written, files cached
        timed(python, IMPORTS[side])
    for _ in range(rounds * IMPORT_RUNS):
        for side, python in pythons.items():
            bare[side].append(timed(python, "pass"))
            samples[side].append(timed(python, IMPORTS[side]))
    return {side: [value - statistics.median(bare[side]) for value in values] for side, values in samples.items()}


def _peak_memory(pythons: dict[str, str], environment: dict[str, str], rounds: int) -> dict[str, list[float]]:
    """Peak resident memory (MB) of binding the planning, graph and workspace cards and calling each once."""
    peaks: dict[str, list[float]] = {side: [] for side in pythons}
    for _ in range(rounds):
        for side, python in pythons.items():
            done = subprocess.run(
                [python, "-c", MEMORY[side], str(HERE)],
                cwd=REPO,
                env={**os.environ, **environment},
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            numbers = [line for line in done.stdout.split() if line.isdigit()]
            if done.returncode != 0 or not numbers:
                raise RuntimeError(f"the {side} memory probe failed: {done.stderr.strip()[-400:]}")
            peaks[side].append(int(numbers[-1]) / 1024)
    return peaks


# -- the table ------------------------------------------------------------------------------


def _value(median: float, unit: str) -> str:
    if math.isnan(median):
        return "n/a"
    if unit == "MB":
        return f"{median:.1f} MB"
    return f"{median * 1000:.1f} µs" if median < 1 else f"{median:.2f} ms"


def table(rows: list[tuple[str, float, float, str, str]], header: str) -> str:
    """``rows``: (case, peer median, our median, unit, note)."""
    cells = []
    for label, theirs, ours, unit, note in rows:
        ratio = theirs / ours if ours > 0 and not math.isnan(theirs) and not math.isnan(ours) else math.nan
        verdict = "" if math.isnan(ratio) else "met" if ratio >= GOAL else "missed"
        cells.append(
            (
                label,
                _value(theirs, unit),
                _value(ours, unit),
                "n/a" if math.isnan(ratio) else f"{ratio:,.2f}x",
                verdict,
                note,
            )
        )
    titles = ("case", PEER, "toolcards", "ratio", f">= {GOAL}x", "note")
    widths = [max(len(titles[i]), *(len(row[i]) for row in cells)) for i in range(5)]

    def line(row: tuple[str, ...]) -> str:
        numbers = "  ".join(row[i].rjust(widths[i]) for i in (1, 2, 3))
        return f"{row[0].ljust(widths[0])}  {numbers}  {row[4].ljust(widths[4])}  {row[5]}".rstrip()

    out = [header, "", line(titles), line((*("-" * w for w in widths), "----"))]
    out += [line(row) for row in cells]
    return "\n".join(out) + "\n"


def _describe(python: str) -> str:
    done = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"], capture_output=True, text=True, check=False
    )
    return f"Python {done.stdout.strip()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peer", description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--suites", default=",".join(SUITES), help=f"comma-separated, of {', '.join(SUITES)}")
    parser.add_argument("--no-import-memory", action="store_true", help="skip import time and peak memory")
    args = parser.parse_args(argv)
    suites = [s for s in args.suites.split(",") if s]
    unknown = sorted(set(suites) - set(SUITES))
    if unknown:
        parser.error(f"unknown suite(s) {', '.join(unknown)}")
    try:
        python = find_python()
        venv = peer_venv(python)
    except CannotRun as reason:
        print(f"python -m bench.peer cannot run here: {reason}", file=sys.stderr)
        return 2
    pythons = {"toolcards": sys.executable, PEER: str(venv / "bin" / "python")}
    drivers = {"toolcards": "toolcards_driver.py", PEER: "akgentic_driver.py"}
    samples: dict[str, dict[str, list[float]]] = {side: {} for side in pythons}
    notes: dict[str, dict[str, str]] = {side: {} for side in pythons}
    order: list[str] = []
    with tempfile.TemporaryDirectory(prefix="peer-rg-") as rg_directory:
        environment = _same_rg(Path(rg_directory))
        for number in range(args.rounds):
            print(f"round {number + 1} of {args.rounds}", file=sys.stderr, flush=True)
            for index, suite in enumerate(suites):
                sides = list(pythons) if (number + index) % 2 == 0 else list(reversed(pythons))
                for side in sides:
                    for label, case in _run_suite(pythons[side], drivers[side], suite, environment).items():
                        if label not in order:
                            order.append(label)
                        samples[side].setdefault(label, []).extend(case["samples"])
                        notes[side][label] = case["note"]
        rows: list[tuple[str, float, float, str, str]] = []
        for label in order:
            theirs = samples[PEER].get(label) or []
            ours = samples["toolcards"].get(label) or []
            note = "; ".join(f"{side}: {text}" for side in pythons if (text := notes[side].get(label)))
            rows.append(
                (
                    label,
                    statistics.median(theirs) if theirs else math.nan,
                    statistics.median(ours) if ours else math.nan,
                    "ms",
                    note,
                )
            )
        if not args.no_import_memory:
            imports = _import_times(pythons, args.rounds)
            rows.append(
                (
                    "import the package and 3 cards",
                    statistics.median(imports[PEER]),
                    statistics.median(imports["toolcards"]),
                    "ms",
                    f"over a bare start of the same interpreter; {args.rounds * IMPORT_RUNS} runs each",
                )
            )
            peaks = _peak_memory(pythons, environment, args.rounds)
            rows.append(
                (
                    "peak memory, 3 cards bound, one call each",
                    statistics.median(peaks[PEER]),
                    statistics.median(peaks["toolcards"]),
                    "MB",
                    "ru_maxrss of the whole process",
                )
            )
    header = (
        f"{PEER} {VERSION} ({_describe(pythons[PEER])}) against toolcards ({_describe(sys.executable)}), "
        f"{args.rounds} interleaved rounds, {os.cpu_count()} CPUs; ratio = {PEER} / toolcards"
    )
    sys.stdout.write(table(rows, header))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
