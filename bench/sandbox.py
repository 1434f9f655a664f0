"""``echo hello`` through the sandbox actor, end to end, per backend that runs here.

Measured as a tool would call it: ``proxy.run(cmd)`` → worker thread → spawn → capture →
group kill → result. Targets on the reference machine: <= 20 ms median for ``local``,
<= 40 ms for ``bwrap``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pykka

from bench.timing import median_ms
from toolcards.sandbox import BwrapSandboxActor, LocalSandboxActor, SandboxActor
from toolcards.sandbox.bwrap import bwrap_available
from toolcards.sandbox.cgroup import cgroup_support

TARGETS_MS = {"local": 20.0, "bwrap": 40.0}


def _echo_ms(cls: type[SandboxActor], workspace: Path) -> float:
    ref = cls.start(workspace)
    proxy = ref.proxy()
    try:

        def echo() -> None:
            result = proxy.run("echo hello").get().get()
            if result.stdout != "hello\n":
                raise RuntimeError(f"unexpected result: {result.render()}")

        return median_ms(echo, repeat=60, warmup=5)
    finally:
        ref.stop()


def run() -> list[tuple[str, float, str]]:
    rows: list[tuple[str, float, str]] = []
    support = cgroup_support()
    cgroup_note = f"cgroup v{support.version}" if support.version else f"no cgroup: {support.reason}"
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        workspace = Path(tmp)
        for mode, cls in (("local", LocalSandboxActor), ("bwrap", BwrapSandboxActor)):
            if mode == "bwrap" and not bwrap_available():
                rows.append((f"{mode}: echo hello", 0.0, "skipped: bubblewrap unavailable"))
                continue
            median = _echo_ms(cls, workspace)
            target = TARGETS_MS[mode]
            verdict = "ok" if median <= target else "over"
            rows.append((f"{mode}: echo hello", median, f"target <= {target:.0f} ms ({verdict}); {cgroup_note}"))
    pykka.ActorRegistry.stop_all()
    return rows


if __name__ == "__main__":
    for name, median, note in run():
        print(f"{name:24} {median:8.2f} ms  {note}")
