"""``echo hello`` through the sandbox actor, end to end, per backend that runs here; and the
disk quota's check before every command.

Measured as a tool would call it: ``proxy.run(cmd)`` → worker thread → spawn → capture →
group kill → result. Targets on the reference machine: <= 20 ms median for ``local``,
<= 40 ms for ``bwrap``.

A background run (``exec_command(cmd, background=True)``) is timed from the tool call to the
run id it returns, through the whole tool pipeline; the run is stopped, untimed, after each.
Target: <= 20 ms.

A network allowlist (``ExecTool(network=[...])``, bwrap) sends a command's connections through
the sandbox's proxy: a forwarder inside, a Unix socket, the proxy on the host. A script inside
the sandbox times TCP connect + CONNECT + TLS handshake to a local HTTPS server through it,
and the same connect + handshake straight to the server from a sandbox with the host's network
(``network=True``); the row is the difference of the medians. Target: <= +5 ms.

The quota check (``WorkspaceUsage.at_start``) runs on a tree of 2,000 files, with the default
limits (far from the quota: one ``statvfs``), and after a file was deleted: near the quota it
walks the tree; far from it, within the walk spacing, it does not.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pykka

from bench.timing import Case, Stats, measure
from toolcards.fs._tree_usage import WorkspaceUsage
from toolcards.sandbox import ExecLimits, SandboxActor
from toolcards.sandbox._actor import BwrapSandboxActor, LocalSandboxActor
from toolcards.sandbox._bwrap import bwrap_available
from toolcards.sandbox._cgroup import cgroup_support

TARGETS_MS = {"local": 20.0, "bwrap": 40.0}
BACKGROUND_START_TARGET_MS = 20.0


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


def _background_start(mode: str) -> Stats:
    from toolcards import ToolFactory
    from toolcards.sandbox import ExecTool
    from toolcards.testing import FakeObserver

    with FakeObserver("Runner", f"bench-background-{mode}") as member:
        card = ExecTool(mode=mode, allowed_commands=[], max_background_runs=64)
        tools = {tool.name: tool for tool in ToolFactory([card], observer=member).tools()}
        started: list[str] = []

        def start() -> None:
            answer = tools["exec_command"].call_sync({"cmd": "sleep 30", "background": True})
            started.append(answer.split("Started background run ", 1)[1].split(" ", 1)[0])

        def stop() -> None:
            tools["exec_stop"].call_sync({"run_id": started.pop()})

        return measure(start, repeat=40, warmup=5, undo=stop)


HANDSHAKES = """
import socket, ssl, statistics, sys, time
mode, port = sys.argv[1], int(sys.argv[2])
context = ssl.create_default_context(cafile="ca.pem")
def connect():
    if mode == "direct":
        raw = socket.create_connection(("127.0.0.1", port))
    else:
        raw = socket.create_connection(("127.0.0.1", 3128))
        raw.sendall(f"CONNECT bench.test:{port} HTTP/1.1\\r\\nHost: bench.test:{port}\\r\\n\\r\\n".encode())
        head = b""
        while not head.endswith(b"\\r\\n\\r\\n"):
            head += raw.recv(1)
        assert head.startswith(b"HTTP/1.1 200"), head
    context.wrap_socket(raw, server_hostname="bench.test").close()
samples = []
for index in range(35):
    started = time.perf_counter()
    connect()
    if index >= 5:
        samples.append((time.perf_counter() - started) * 1000)
print(" ".join(f"{sample:.3f}" for sample in samples))
"""

TLS_SERVER = """
import http.server, ssl, sys
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"""
ROUNDS = 3
"""Rounds of (through the proxy, direct), alternated so that a change in the machine's load
falls on both."""


def _proxy_overhead() -> Case:
    import shutil
    import statistics
    import subprocess
    import sys

    from bench.timing import percentile
    from toolcards import ToolFactory
    from toolcards.fs._locations import workspace_dir
    from toolcards.sandbox import ExecCommandParam, ExecTool
    from toolcards.testing import FakeObserver

    label = "bwrap: HTTPS connect through the allowlist proxy, over a direct one"
    if shutil.which("openssl") is None:
        return Case.skipped(label, "openssl is needed for the test certificate")
    samples: dict[str, list[float]] = {"proxy": [], "direct": []}
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-tls-") as tmp:
        cert, key = Path(tmp) / "cert.pem", Path(tmp) / "key.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(key), "-out", str(cert), "-subj", "/CN=bench.test",
             "-addext", "subjectAltName=DNS:bench.test", "-days", "1"],
            check=True, capture_output=True,
        )  # fmt: skip
        # The server is a process of its own, as a remote one would be: it does not share this
        # process's interpreter with the proxy.
        server = subprocess.Popen(
            [sys.executable, "-c", TLS_SERVER, str(cert), str(key)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert server.stdout is not None
            port = int(server.stdout.readline())
            with FakeObserver("Fetcher", "bench-egress") as member:
                runs = {}
                for mode, network in (("proxy", ["bench.test"]), ("direct", True)):
                    agent = FakeObserver(f"Fetcher-{mode}", f"bench-egress-{mode}", system=member.system)
                    workspace = workspace_dir(agent.team_id)
                    workspace.mkdir(parents=True, exist_ok=True)
                    shutil.copy(cert, workspace / "ca.pem")
                    (workspace / "handshakes.py").write_text(HANDSHAKES)
                    card = ExecTool(
                        mode="bwrap",
                        allowed_commands=[],
                        network=network,
                        options={"resolve": {"bench.test": "127.0.0.1"}} if mode == "proxy" else {},
                    )
                    runs[mode] = ToolFactory([card], observer=agent).get_commands()[ExecCommandParam]
                for _ in range(ROUNDS):
                    for mode, run in runs.items():
                        out = run(cmd=f"python3 handshakes.py {mode} {port}")
                        samples[mode] += [
                            float(value) for value in out.split("stdout:\n", 1)[1].split("\n", 1)[0].split()
                        ]
        finally:
            server.kill()
            server.wait()
    proxy, direct = statistics.median(samples["proxy"]), statistics.median(samples["direct"])
    return Case(
        label,
        proxy - direct,
        f"TCP connect + CONNECT + TLS 1.3 handshake (P-256), {len(samples['proxy'])} each, alternating, inside "
        f"the sandbox: {proxy:.2f} ms through the proxy (p95 {percentile(samples['proxy'], 0.95):.2f}), "
        f"{direct:.2f} ms direct (p95 {percentile(samples['direct'], 0.95):.2f})",
        target=5.0,
    )


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
            rows.append(
                Case.timed(
                    f"{mode}: background run, exec_command to run id",
                    _background_start(mode),
                    "the tool call returns before the spawn; sleep 30, stopped after each",
                    target=BACKGROUND_START_TARGET_MS,
                )
            )
            if mode == "bwrap":
                rows.append(_proxy_overhead())
    with tempfile.TemporaryDirectory(prefix="toolcards-bench-") as tmp:
        rows += _quota_checks(Path(tmp))
    pykka.ActorRegistry.stop_all()
    return rows


if __name__ == "__main__":
    from bench.__main__ import text_table

    print(text_table(("sandbox", case) for case in run()), end="")
