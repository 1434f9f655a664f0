"""What importing toolcards costs a fresh interpreter, over a bare one.

Each case is timed as a whole ``python -c CODE`` process, 20 times, the cases taking
turns so that drift on a noisy machine hits them alike; a row is the median of its runs
minus the median of ``python -c pass``. The dependencies are measured the same way, for
scale: most of what the first card costs is pydantic's own (importing it, then building
the first model class, which also loads its plugin machinery and ``importlib.metadata``).

Bytecode is cached as in an installed package: the runs read ``.pyc`` files written by a
warm-up run into a temporary ``PYTHONPYCACHEPREFIX``, whatever the checkout's
``__pycache__`` holds and even under ``PYTHONDONTWRITEBYTECODE``.

Target: ``import toolcards`` <= 150 ms over bare Python.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from bench.timing import Case, percentile

RUNS = 20

FIRST_CALL = """
from typing import ClassVar
from toolcards import COMMAND, BaseToolParam, Channels, ToolCard, ToolFactory, capability

class PingParam(BaseToolParam):
    expose: set[Channels] = {COMMAND}

class PingCard(ToolCard):
    kind: ClassVar[str] = "bench_import_ping"
    ping: PingParam | bool = True

    @capability("ping")
    def ping_tool(self, x: int) -> int:
        \"\"\"Add one.\"\"\"
        return x + 1

assert ToolFactory([PingCard()]).get_commands()[PingParam](x=1) == 2
"""

CASES: list[tuple[str, str, str]] = [
    ("from pydantic import BaseModel", "from pydantic import BaseModel", "for scale: pydantic's import"),
    (
        "pydantic: import + first model class",
        "from pydantic import BaseModel\nclass M(BaseModel):\n    x: int",
        "for scale: the floor of any card",
    ),
    ("import pykka", "import pykka", "for scale: the actor runtime (loaded on first use)"),
    ("import toolcards", "import toolcards", ""),
    (
        "from toolcards import ToolCard, ToolFactory",
        "from toolcards import ToolCard, ToolFactory",
        "first use: pydantic and the core",
    ),
    ("first call: define, bind, call a card", FIRST_CALL, "imports + one tool's schema + one call"),
]


def _time_ms(code: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return (time.perf_counter() - started) * 1000.0


def _machine() -> str:
    return f"{os.cpu_count()} CPUs, Python {platform.python_version()}"


TARGETS_MS = {"import toolcards": 150.0}


def run() -> list[Case]:
    codes = ["pass"] + [code for _, code, _ in CASES]
    with tempfile.TemporaryDirectory(prefix="bench-import-pyc-") as cache:
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        for code in codes:  # warm-up: writes the bytecode every timed run reads
            _time_ms(code, env)
        samples: list[list[float]] = [[] for _ in codes]
        for _ in range(RUNS):
            for index, code in enumerate(codes):
                samples[index].append(_time_ms(code, env))
    medians = [statistics.median(runs) for runs in samples]
    bare = medians[0]
    machine = _machine()
    rows = [
        Case(
            "bare interpreter (python -c pass)",
            bare,
            f"subtracted below; medians of {RUNS} runs; {machine}, {platform.system()} {platform.machine()}",
            p95=percentile(samples[0], 0.95),
        )
    ]
    rows += [
        Case(
            f"{label} (over bare)",
            median - bare,
            f"{note}; {machine}" if note else machine,
            p95=percentile(runs, 0.95) - bare,
            target=TARGETS_MS.get(label),
        )
        for (label, _, note), median, runs in zip(CASES, medians[1:], samples[1:], strict=True)
    ]
    return rows
