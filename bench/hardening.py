"""Hardening benchmark: what hostile content and arguments cost, and what the safe paths cost.

``run()`` returns :class:`~bench.timing.Case` rows; nothing is asserted. Every call goes
through the real tools (``ToolFactory`` with a ``FakeObserver``), the way a model's call
does, so validation, the pipeline and the workspace actor are included.

* **grep on one 10 MB matching line**, and **a page read of a 200 MB file**: each runs in a
  fresh child process that first binds the tools and reads a small file; the note bounds
  what the call added to the process's memory: its peak (``ru_maxrss``) minus the resident
  memory just before the call. Goals: grep <= 64 MB, read <= 16 MB.
* **the worst pathological argument**: each case once (after a warm-up of the tool), the
  slowest reported. Goal <= 100 ms each: the answer may be a result or a refusal.
* **normal reads and edits end to end** (a 2 KB file read, an exact edit of a 2,000-line
  file): the cost of resolving every path through the tree's directory handles is in these;
  compare with the same rows of an older checkout run on the same machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.timing import Case, Stats, measure

__all__ = ["run"]

REPO = Path(__file__).resolve().parents[1]
Row = Case

_CHILD = textwrap.dedent(
    """
    import os, resource, sys, json
    from pathlib import Path
    from toolcards import ToolFactory
    from toolcards.testing import FakeObserver
    from toolcards.workspace import WorkspaceTool
    case, tree = sys.argv[1], Path(sys.argv[2])
    with FakeObserver("Bench", "hardening") as agent:
        tools = {t.name: t for t in ToolFactory([WorkspaceTool(workspace_id="bench")], observer=agent).tools()}
        tools["workspace_read"].call_sync({"path": "small.txt"})
        # Resident memory now: the call's own cost is at most its peak minus this. On Linux
        # the peak is reset here (clear_refs 5), so what came before cannot count.
        before = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
        try:
            with open("/proc/self/clear_refs", "w") as refs:
                refs.write("5")
            reset = True
        except OSError:
            reset = False
        import time
        started = time.perf_counter()
        try:
            if case == "grep":
                answer = tools["workspace_grep"].call_sync({"pattern": "needle", "path": "big"})
            elif case == "read":
                answer = tools["workspace_read"].call_sync({"path": "big/huge.log", "offset": 1000, "limit": 50})
            else:
                answer = ""
            outcome = "ok"
        except Exception as exc:
            answer, outcome = str(exc), type(exc).__name__
        elapsed = (time.perf_counter() - started) * 1000
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if reset:
            with open("/proc/self/status") as status:
                peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
        print(json.dumps({"peak_kb": peak, "before_kb": before, "ms": elapsed, "outcome": outcome,
                          "chars": len(str(answer))}))
    """
)


def _child(case: str, root: Path) -> dict[str, Any]:
    import json

    env = {**os.environ, "TOOLCARDS_WORKSPACES_ROOT": str(root), "PYTHONPATH": str(REPO / "src")}
    env.pop("TOOLCARDS_STORE", None)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, case, str(root / "bench")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _memory_rows(root: Path) -> list[Row]:
    tree = root / "bench"
    big = tree / "big"
    big.mkdir(parents=True)
    (tree / "small.txt").write_text("small\n" * 10)
    line = ("x" * 1023 + " ") * 5 * 1024 + "needle" + (" y" * 500_000)
    (big / "one-line.txt").write_text(line + "\n")
    with (big / "huge.log").open("w") as handle:
        chunk = "".join(f"log line {n}: the quick brown fox jumps over the lazy dog\n" for n in range(10_000))
        while handle.tell() < 200 * 1024 * 1024:
            handle.write(chunk)
    rows: list[Row] = []
    for case, label, goal in (
        ("grep", "grep, one 10 MB matching line", 64),
        ("read", "read one page of a 200 MB file", 16),
    ):
        try:
            measured = _child(case, root)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            rows.append(Case(label, float("nan"), f"failed: {exc}"))
            continue
        # The child's peak (ru_maxrss) minus what it held just before the call bounds what
        # the call added, even when the peak was reached earlier (while importing).
        over_mb = max(0, measured["peak_kb"] - measured["before_kb"]) / 1024
        verdict = "ok" if over_mb <= goal else "over"
        rows.append(
            Case(
                label,
                measured["ms"],
                f"the call added at most {over_mb:.1f} MB to a child process's memory (goal <= {goal} MB: "
                f"{verdict}); answer: {measured['outcome']}, {measured['chars']:,} chars",
            )
        )
    return rows


def _tools(root: Path) -> dict[str, Any]:
    from toolcards import ToolFactory
    from toolcards.planning import PlanningTool
    from toolcards.sandbox import ExecTool
    from toolcards.testing import FakeObserver
    from toolcards.workspace import WorkspaceTool

    os.environ["TOOLCARDS_WORKSPACES_ROOT"] = str(root)
    agent = FakeObserver("Bench", "hardening-args")
    cards = [WorkspaceTool(workspace_id="args"), PlanningTool(), ExecTool(workspace_id="args", mode="local")]
    factory = ToolFactory(cards, observer=agent)
    tools: dict[str, Any] = {tool.name: tool for tool in factory.tools()}
    tools["/registry"] = factory.command_registry()
    return tools


def _timed(call: Callable[[], object]) -> tuple[float, str]:
    started = time.perf_counter()
    try:
        answer = call()
        outcome = "refused (Error: line)" if str(answer).startswith("Error: ") else "answered"
    except Exception as exc:
        outcome = f"refused ({type(exc).__name__})"
    return (time.perf_counter() - started) * 1000, outcome


def _pathological_rows(root: Path) -> list[Row]:
    tools = _tools(root)
    tree = root / "args"
    (tree / "src").mkdir(parents=True, exist_ok=True)
    (tree / "src" / "a.py").write_text("print('a')\n" * 100)
    (tree / "src" / "big.txt").write_text("".join(f"line number {n} of the long file\n" for n in range(20_000)))
    tools["workspace_read"].call_sync({"path": "src/a.py"})
    tools["workspace_read"].call_sync({"path": "src/big.txt"})
    (tree / "src" / "alt.txt").write_text("ab\ncd\n" * 10_000)
    (tree / "src" / "same.txt").write_text("same\n" * 20_000)
    tools["workspace_read"].call_sync({"path": "src/alt.txt"})
    tools["workspace_read"].call_sync({"path": "src/same.txt"})
    patch_a, patch_big = "--- a/src/a.py\n+++ b/src/a.py\n", "--- a/src/big.txt\n+++ b/src/big.txt\n"

    def patch(text: str) -> Callable[[], object]:
        return lambda: tools["workspace_patch"].call_sync({"patch_text": text})

    cases: dict[str, Callable[[], object]] = {
        'glob "{" x 100,000': lambda: tools["workspace_glob"].call_sync({"pattern": "{" * 100_000}),
        'glob "{a,b}" x 1,000': lambda: tools["workspace_glob"].call_sync({"pattern": "{a,b}" * 1000}),
        'glob "**/" x 5,000': lambda: tools["workspace_glob"].call_sync({"pattern": "**/" * 5000}),
        'grep include "{" x 100,000': lambda: tools["workspace_grep"].call_sync(
            {"pattern": "a", "include": "{" * 100_000}
        ),
        "grep pattern (a+)+$ on a long line": lambda: tools["workspace_grep"].call_sync({"pattern": "(a+)+$"}),
        "exec_command of 2 MB": lambda: tools["exec_command"].call_sync({"cmd": "echo " + "'x' " * 500_000}),
        "slash command of 2 MB": lambda: tools["/registry"].dispatch("/search_planning " + '"a b" ' * 350_000),
        "workspace_edit old_string of 1 MB": lambda: tools["workspace_edit"].call_sync(
            {"path": "src/a.py", "old_string": "q" * 1_000_000, "new_string": "x"}
        ),
        "workspace_patch of 4 MB garbage": patch("@@ -1 +1 @@\n" + "-x\n" * 1_300_000),
        # Shapes that are valid line by line: each is refused (or answered) by bounds, not by a syntax error.
        "workspace_patch hunk undercounting 1.3 M lines": patch(patch_a + "@@ -1 +1 @@\n" + "-x\n" * 1_300_000),
        "workspace_patch hunk undercounting 1.3 M context lines": patch(patch_a + "@@ -1 +1 @@\n" + " x\n" * 1_300_000),
        "workspace_patch of CRLF lines undercounting": patch(
            (patch_a + "@@ -1 +1 @@\n" + "-x\n" * 1_000_000).replace("\n", "\r\n")
        ),
        "workspace_patch of 150,000 missing files": patch(
            "".join(f"--- a/f{n}\n+++ b/f{n}\n@@ -1 +1 @@\n-a\n+b\n" for n in range(150_000))[:4_000_000]
        ),
        "workspace_patch creating 150,000 files": patch(
            "".join(f"--- /dev/null\n+++ b/new{n}\n" for n in range(150_000))[:4_000_000]
        ),
        "workspace_patch of 100,000 one-line hunks": patch(
            patch_big + "".join(f"@@\n line number {n % 20_000} of the long file\n" for n in range(100_000))
        ),
        "workspace_patch of 2 M empty lines in a hunk": patch(
            patch_a + "@@\n print('a')\n" + "\n" * 2_000_000 + "+x\n"
        ),
        "workspace_patch of 2,000 lines matching nowhere in 20,000": patch(
            patch_big + "@@\n" + "".join(f" line number {n} of the long fil\n" for n in range(2_000))
        ),
        "workspace_patch of a 10,000-line block against 2 alternating lines": patch(
            "--- a/src/alt.txt\n+++ b/src/alt.txt\n@@\n" + " ab\n cd\n" * 5_000 + "-ab\n-XX\n+new\n"
        ),
        "workspace_patch of 5,000 identical lines in 20,000": patch(
            "--- a/src/same.txt\n+++ b/src/same.txt\n@@\n" + " same\n" * 5_000 + "-same\n+other\n"
        ),
        "workspace_patch of 140,000 no-newline markers": patch(
            patch_a + "@@ -1 +1 @@\n-print('a')\n" + "\\ No newline at end of file\n" * 140_000 + "+print('a')\n"
        ),
        "workspace_patch of binary junk": patch(
            patch_a + "@@ -1 +1 @@\n" + (bytes(range(256)) * 15_000).decode("latin-1")
        ),
    }
    (tree / "src" / "long.txt").write_text("a" * 100_000 + "b\n")
    rows: list[Row] = []
    worst = ("", 0.0)
    for label, call in cases.items():
        elapsed, outcome = _timed(call)
        rows.append(Case(f"pathological: {label}", elapsed, outcome, target=100.0))
        if elapsed > worst[1]:
            worst = (label, elapsed)
    rows.insert(0, Case("the worst pathological argument", worst[1], worst[0], target=100.0))
    return rows


def _sampled(call: Callable[[], object], repeat: int) -> Stats:
    return measure(call, repeat=repeat, warmup=1)


def _normal_rows(root: Path) -> list[Row]:
    tools = _tools(root)
    tree = root / "args"
    (tree / "small.txt").write_bytes(b"x" * 2047 + b"\n")
    (tree / "long.txt").write_text("".join(f"line number {n} of the long file\n" for n in range(2000)))
    tools["workspace_read"].call_sync({"path": "long.txt"})
    flip = [0]

    def edit() -> object:
        old, new = (
            ("line number 1000 ", "line NUMBER 1000 ")
            if flip[0] % 2 == 0
            else ("line NUMBER 1000 ", "line number 1000 ")
        )
        flip[0] += 1
        return tools["workspace_edit"].call_sync({"path": "long.txt", "old_string": old, "new_string": new})

    return [
        Case.timed(
            "workspace_read 2 KB file, end to end",
            _sampled(lambda: tools["workspace_read"].call_sync({"path": "small.txt"}), 500),
            "through the tool pipeline; median of 500",
            target=0.14,
        ),
        Case.timed(
            "workspace_read 2,000 lines, end to end",
            _sampled(lambda: tools["workspace_read"].call_sync({"path": "long.txt"}), 200),
            "median of 200",
        ),
        Case.timed(
            "workspace_edit exact, 2,000-line file, end to end",
            _sampled(edit, 200),
            "gate, atomic write, diff; median of 200",
            target=1.0,
        ),
    ]


def run() -> list[Row]:
    """Build the fixtures in a temporary directory and measure; takes about half a minute."""
    import pykka

    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="toolcards-hardening-") as temp:
        root = Path(temp).resolve()
        previous = os.environ.get("TOOLCARDS_WORKSPACES_ROOT")
        try:
            rows += _memory_rows(root)
            rows += _pathological_rows(root)
            rows += _normal_rows(root)
        finally:
            pykka.ActorRegistry.stop_all()
            from toolcards.store import close_default_stores

            close_default_stores()
            if previous is None:
                os.environ.pop("TOOLCARDS_WORKSPACES_ROOT", None)
            else:
                os.environ["TOOLCARDS_WORKSPACES_ROOT"] = previous
    return rows
