"""The sandbox side of a network allowlist: ``127.0.0.1:3128`` inside, forwarded to the proxy's socket.

A command with an allowlist has no network but its own loopback. Before it starts, a small
Python program (:data:`FORWARDER`, run with the Python the sandbox binds) listens on
``127.0.0.1:`` :data:`PROXY_PORT`, connects to the proxy's Unix socket (:mod:`.egress`),
detaches a process that passes each accepted connection to the proxy, and execs the command
in its own place, so the command keeps the process, exit code and output it would have had. The forwarder dies with the
sandbox: bubblewrap kills what is left in its PID namespace when the command ends.

:func:`proxy_env` is what tells the command's HTTP clients to use it.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["EGRESS_MOUNT", "FORWARDER", "PROXY_PORT", "forwarder_argv", "proxy_env"]

PROXY_PORT = 3128
"""The proxy's port on the sandbox's private loopback."""

EGRESS_MOUNT = "/run/toolcards-egress"
"""Where the gate's directory (with the proxy's socket) appears inside the sandbox."""

FORWARDER = """
import os, socket, sys
path, port = sys.argv[1], int(sys.argv[2])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(128)
control = socket.socket(socket.AF_UNIX)
control.connect(path)
child = os.fork()
if child:
    listener.close()
    control.close()
    os.waitpid(child, 0)
    os.execvp(sys.argv[3], sys.argv[3:])
if os.fork():
    os._exit(0)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
while True:
    client, _ = listener.accept()
    socket.send_fds(control, [b"c"], [client.fileno()])
    client.close()
"""
"""Run as ``python -I -S -c FORWARDER SOCKET PORT COMMAND...``: listen, connect to the proxy,
detach the passer (a double fork, so the command never sees it as its child), then exec the
command. The passer hands each accepted connection itself (its file descriptor, over the
Unix socket) to the proxy, which then talks to the command's client directly: no bytes are
copied inside the sandbox, and a packet crosses one process on its way, the proxy."""


def forwarder_argv(python: str, socket_path: str, command: Sequence[str]) -> list[str]:
    """``command`` preceded by the forwarder, run by ``python`` (a path valid inside the sandbox)."""
    return [python, "-I", "-S", "-c", FORWARDER, socket_path, str(PROXY_PORT), *command]


def proxy_env() -> dict[str, str]:
    """Variables that send a command's HTTP(S) traffic through the forwarder, and its own
    loopback traffic (a server it started itself) around it."""
    url = f"http://127.0.0.1:{PROXY_PORT}"
    local = "localhost,127.0.0.1,::1"
    env: dict[str, str] = {}
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        env[name] = env[name.upper()] = url
    env["no_proxy"] = env["NO_PROXY"] = local
    return env
