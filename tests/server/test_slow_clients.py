"""Slow HTTP clients are dropped, others are not held up, and long answers live on.

A real ``toolcards serve --transport http`` process with short limits (``--header-timeout 1
--body-timeout 1 --body-min-rate 100 --max-header-bytes 4096``), talked to over real sockets.
No test measures time: a slow client must be disconnected before it finishes sending (it
would take minutes), within a generous bound; a stream must still be open, and still
deliver, after waiting longer than every limit.
"""

from __future__ import annotations

import json
import os
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from bench.serve_process import ServeProcess

from tests.dashboard.servers import Process, call_tool, get

pytestmark = pytest.mark.slow

TEAM = """\
team_id: patient
cards:
  - kind: planning
  - kind: workspace
  - kind: exec
    mode: local
    allowed_commands: [sleep]
"""
LIMITS = ["--header-timeout", "1", "--body-timeout", "1", "--body-min-rate", "100", "--max-header-bytes", "4096"]
OUTLIVE_S = 3.0
"""How long the long-lived streams are left idle: three times every time limit above."""
BOUND_S = 60.0
"""Longest a test waits for something that should happen within a few seconds."""


def serve(directory: Path) -> Process:
    """``toolcards serve --transport http`` of :data:`TEAM` with :data:`LIMITS`, from ``directory``."""
    (directory / "team.yaml").write_text(TEAM)
    env = {
        **{name: value for name, value in os.environ.items() if name != "TOOLCARDS_TOKEN"},
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "TOOLCARDS_WORKSPACES_ROOT": str(directory / "workspaces"),
        "TOOLCARDS_STORE": str(directory / "state.db"),
    }
    return Process(ServeProcess(directory / "team.yaml", env, *LIMITS), env)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    process = serve(tmp_path_factory.mktemp("slow-clients"))
    try:
        yield process
    finally:
        process.stop()


def connect(served: Process) -> socket.socket:
    parts = urlsplit(served.url)
    assert parts.hostname is not None and parts.port is not None
    return socket.create_connection((parts.hostname, parts.port), timeout=BOUND_S)


class Dribbler(threading.Thread):
    """Sends ``head`` then ``dribble`` one byte every ``pause_s`` seconds, until the server
    closes the connection (or it has sent everything); keeps what the server answered."""

    def __init__(self, sock: socket.socket, head: bytes, dribble: bytes, pause_s: float) -> None:
        super().__init__(daemon=True)
        self.sock, self.head, self.dribble, self.pause_s = sock, head, dribble, pause_s
        self.sent = 0
        self.answer = b""
        self.closed_by_server = False

    def run(self) -> None:
        try:
            self.sock.sendall(self.head)
            for byte in self.dribble:
                self.sock.sendall(bytes([byte]))
                self.sent += 1
                if self._server_closed(self.pause_s):
                    return
        except (BrokenPipeError, ConnectionResetError):
            self.closed_by_server = True

    def _server_closed(self, wait_s: float) -> bool:
        readable, _, _ = select.select([self.sock], [], [], wait_s)
        if not readable:
            return False
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            data = b""
        self.answer += data
        if not data:
            self.closed_by_server = True
        return not data


def request_head(served: Process, method: str, path: str, *extra: str) -> bytes:
    host = urlsplit(served.url).netloc
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", f"Authorization: Bearer {served.token}", *extra]
    return ("\r\n".join(lines) + "\r\n").encode()


def test_a_client_dribbling_its_headers_is_dropped_while_others_are_served(served: Process) -> None:
    dribbled_headers = b"".join(f"X-Slow-{n}: {'y' * 10}\r\n".encode() for n in range(20)) + b"\r\n"
    slow = Dribbler(connect(served), request_head(served, "GET", "/api/team"), dribbled_headers, pause_s=0.5)
    slow.start()
    try:
        # Meanwhile, ordinary clients are answered.
        for _ in range(3):
            status, _, body = get(f"{served.origin}/api/team", {"Authorization": f"Bearer {served.token}"})
            assert status == 200 and json.loads(body)["team"] == "patient"
        assert "Created" in call_tool(served.url, "update_planning", {"create_tasks": [{"description": "Patience"}]})
        slow.join(BOUND_S)
    finally:
        slow.sock.close()
    assert slow.closed_by_server and slow.sent < len(dribbled_headers)  # dropped long before the end
    assert slow.answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"did not all arrive within 1 s" in slow.answer


def test_a_connection_that_sends_nothing_is_closed(served: Process) -> None:
    idle = Dribbler(connect(served), b"", b"", pause_s=0)
    try:
        assert idle._server_closed(BOUND_S) and idle.answer == b""  # nothing to answer: closed quietly
    finally:
        idle.sock.close()


def test_a_body_slower_than_the_floor_is_dropped(served: Process) -> None:
    length = 100_000
    head = request_head(
        served,
        "POST",
        "/mcp",
        "Content-Type: application/json",
        f"Content-Length: {length}",
        "Accept: application/json",
    )
    slow = Dribbler(connect(served), head + b"\r\n", b"[" + b" " * (length - 1), pause_s=0.25)
    slow.start()
    try:
        status, _, _ = get(f"{served.origin}/api/team", {"Authorization": f"Bearer {served.token}"})
        assert status == 200
        slow.join(BOUND_S)
    finally:
        slow.sock.close()
    assert slow.closed_by_server and slow.sent < length


def test_headers_over_the_size_limit_are_refused(served: Process) -> None:
    # Whole in one read (431, from the protocol), or in several (400, from h11's buffer bound).
    for size in [8_000, 400_000]:
        sock = connect(served)
        try:
            sock.sendall(request_head(served, "GET", "/api/team", f"X-Big: {'z' * size}") + b"\r\n")
            answer = b""
            while chunk := sock.recv(65536):  # the server closes the connection after its answer
                answer += chunk
        except ConnectionResetError:  # it closed before reading everything sent
            pass
        finally:
            sock.close()
        assert answer.startswith((b"HTTP/1.1 431 ", b"HTTP/1.1 400 ")), (size, answer[:200])
        if answer.startswith(b"HTTP/1.1 431 "):
            assert b"over this server's limit of 4,096" in answer
    assert get(f"{served.origin}/api/team", {"Authorization": f"Bearer {served.token}", "X-Fine": "y" * 3000})[0] == 200


def test_event_streams_and_long_calls_outlive_the_limits(served: Process) -> None:
    bearer = {"Authorization": f"Bearer {served.token}"}
    events = connect(served)
    mcp_stream = connect(served)
    try:
        # The dashboard's event stream.
        events.sendall(request_head(served, "GET", "/api/events", "Accept: text/event-stream") + b"\r\n")
        stream = read_until(events, b"\r\n\r\n").split(b"\r\n\r\n", 1)[1]
        stream = next_event(events, stream, b"hello")

        # The MCP endpoint's GET stream, of a session opened by a raw initialize.
        session = initialize(served)
        mcp_stream.sendall(
            request_head(
                served,
                "GET",
                "/mcp",
                "Accept: text/event-stream",
                f"Mcp-Session-Id: {session}",
                "Mcp-Protocol-Version: 2025-06-18",
            )
            + b"\r\n"
        )
        assert mcp_stream.recv(65536).startswith(b"HTTP/1.1 200 ")

        # A call whose answer takes longer than every limit.
        answer = call_tool(served.url, "exec_command", {"cmd": f"sleep {OUTLIVE_S}"})
        assert "exit code: 0" in answer

        time.sleep(OUTLIVE_S)  # idle streams, longer than every limit
        assert still_open(mcp_stream)
        call_tool(served.url, "update_planning", {"create_tasks": [{"description": "Seen live"}]})
        stream = next_event(events, stream, b"changed", containing=b"planning.board")
        assert get(f"{served.origin}/api/team", bearer)[0] == 200
    finally:
        events.close()
        mcp_stream.close()


def test_sigterm_stops_the_server_while_an_mcp_stream_is_open(tmp_path: Path) -> None:
    served = serve(tmp_path)
    stream = connect(served)
    try:
        session = initialize(served)
        stream.sendall(
            request_head(
                served,
                "GET",
                "/mcp",
                "Accept: text/event-stream",
                f"Mcp-Session-Id: {session}",
                "Mcp-Protocol-Version: 2025-06-18",
            )
            + b"\r\n"
        )
        assert stream.recv(65536).startswith(b"HTTP/1.1 200 ")
        served.stop()  # SIGTERM; SIGKILL if the process has not ended 30 s later
    finally:
        stream.close()
    lines = served.served.lines
    assert served.served.process.returncode == 0, lines[-5:]
    assert lines[-2:] == ["toolcards: ending sessions and flushing state", "toolcards: stopped"]
    assert not any("Traceback" in line for line in lines)


def initialize(served: Process) -> str:
    """Open an MCP session with a raw ``initialize``; returns its id."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
    ).encode()
    sock = connect(served)
    try:
        sock.sendall(
            request_head(
                served,
                "POST",
                "/mcp",
                "Content-Type: application/json",
                "Accept: application/json, text/event-stream",
                f"Content-Length: {len(body)}",
                "Connection: close",
            )
            + b"\r\n"
            + body
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    finally:
        sock.close()
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    assert head.startswith("HTTP/1.1 200 "), head
    (session,) = [
        line.split(":", 1)[1].strip() for line in head.split("\r\n") if line.lower().startswith("mcp-session-id:")
    ]
    return session


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    """What ``sock`` receives up to and including ``marker`` (fails if the server closes it first)."""
    seen = b""
    while marker not in seen:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the stream before sending {marker!r}: {seen[-300:]!r}"
        seen += chunk
    return seen


def next_event(sock: socket.socket, stream: bytes, kind: bytes, containing: bytes = b"") -> bytes:
    """Read server-sent events (``stream``: what was read of them so far) up to the next one of
    ``kind`` whose data holds ``containing``; returns what is left after it."""
    while True:
        while b"\n\n" not in stream:
            chunk = sock.recv(65536)
            assert chunk, f"the server closed the stream before an event {kind!r}"
            stream += chunk
        event, stream = stream.split(b"\n\n", 1)
        if f"event: {kind.decode()}".encode() in event and containing in event:
            return stream


def still_open(sock: socket.socket) -> bool:
    """Whether the server has not closed ``sock`` (what it sent meanwhile, if anything, is skipped)."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return True
    return sock.recv(65536, socket.MSG_DONTWAIT) != b""
