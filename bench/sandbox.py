"""``echo hello`` through the sandbox actor, end to end, per backend that runs here.

Measured as a tool would call it: ``proxy.run(cmd)`` → worker thread → spawn → capture →
group kill → result. Targets on the reference machine: <= 20 ms median for ``local``,
<= 40 ms for ``bwrap``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pykka

from bench.timing import Case, Stats, measure
from toolcards.sandbox import BwrapSandboxActor, LocalSandboxActor, SandboxActor
from toolcards.sandbox.bwrap import bwrap_available
from toolcards.sandbox.cgroup import cgroup_support

TARGETS_MS = {"local": 20.0, "bwrap": 40.0}


def _echo(cls: type[SandboxActor], workspace: Path) -> Stats:
    ref = cls.start(workspace)
    proxy = ref.proxy()
    try:

        def echo() -> None:
            result = proxy.run("echo hello").get().get()
            if result.stdout != "hello\n":
                raise RuntimeError(f"unexpected result: {result.render()}")

        return measure(echo, repeat=60, warmup=5)
    finally:
        ref.stop()


def run() -> list[Case]:
    rows: list[Case] = []
    support = cgroup_support()
    cgroup_note = f"cgroup v{support.version}" if support.version else f"no cgroup: {support.reason}"
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        workspace = Path(tmp)
        for mode, cls in (("local", LocalSandboxActor), ("bwrap", BwrapSandboxActor)):
            if mode == "bwrap" and not bwrap_available():
                rows.append(Case.skipped(f"{mode}: echo hello", "bubblewrap unavailable"))
                continue
            rows.append(Case.timed(f"{mode}: echo hello", _echo(cls, workspace), cgroup_note, target=TARGETS_MS[mode]))
    pykka.ActorRegistry.stop_all()
    return rows


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("sandbox", case) for case in run()), end="")
