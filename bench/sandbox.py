"""``echo hello`` through the sandbox actor, end to end, per backend that runs here; and the
disk quota's check before every command.

Measured as a tool would call it: ``proxy.run(cmd)`` → worker thread → spawn → capture →
group kill → result. Targets on the reference machine: <= 20 ms median for ``local``,
<= 40 ms for ``bwrap``.

The quota check (``WorkspaceUsage.at_start``) runs on a tree of 2,000 files, with the default
limits (far from the quota: one ``statvfs``), and after a file was deleted: near the quota it
walks the tree; far from it, within the walk spacing, it does not.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pykka

from bench.timing import Case, Stats, measure
from toolcards.fs.tree_usage import WorkspaceUsage
from toolcards.sandbox import BwrapSandboxActor, ExecLimits, LocalSandboxActor, SandboxActor
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


QUOTA_TREE_FILES = 2_000


def _quota_checks(root: Path) -> list[Case]:
    for index in range(QUOTA_TREE_FILES):
        directory = root / f"d{index % 20}"
        directory.mkdir(exist_ok=True)
        (directory / f"f{index}.txt").write_bytes(b"x" * 4096)
    usage = WorkspaceUsage(root)
    limits = ExecLimits()
    deleted = root / "deleted.bin"

    def check(quota_mb: int) -> None:
        usage.at_start(quota_mb, file_size_mb=limits.file_size_mb)

    def delete_after_a_walk() -> None:
        deleted.write_bytes(b"x" * 65_536)
        usage.measure()
        deleted.unlink()

    usage.measure()
    label = f"quota check, {QUOTA_TREE_FILES:,} files"
    unchanged = measure(lambda: check(limits.disk_mb), repeat=2_000, warmup=50)
    delete_after_a_walk()
    near = measure(lambda: check(10), repeat=100, warmup=5, undo=delete_after_a_walk)
    delete_after_a_walk()
    far = measure(lambda: check(limits.disk_mb), repeat=100, warmup=5, undo=delete_after_a_walk)
    return [
        Case.timed(f"{label}, unchanged", unchanged, f"{limits.disk_mb:,} MB quota: one statvfs"),
        Case.timed(f"{label}, after a delete near the quota", near, "10 MB quota: a walk of the tree"),
        Case.timed(f"{label}, after a delete far from the quota", far, "right after a walk: not walked again"),
    ]


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
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        rows += _quota_checks(Path(tmp))
    pykka.ActorRegistry.stop_all()
    return rows


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("sandbox", case) for case in run()), end="")
