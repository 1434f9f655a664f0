"""A TCP proxy between the tests and a real PostgreSQL server that can lose a COMMIT's answer.

``PgProxy(port)`` listens on a free port of 127.0.0.1 and forwards every connection to the
server, reading the PostgreSQL protocol's messages as they pass (clients must connect
without TLS: :meth:`PgProxy.url` adds ``sslmode=disable``). Two faults, set by the test:

* :meth:`drop_next_commit_answer`: the next simple query holding both ``COMMIT`` and
  ``marker`` goes to the server, which commits it; the proxy waits for the server's
  ``ReadyForQuery`` (so the commit is done), forwards none of the answer and closes the
  client's connection. The client sees a connection lost during its ``COMMIT``, exactly as
  when a network fails at that moment.
* :attr:`refuse_connections`: new connections are accepted and closed at once, as a server
  that went away would look to the client; :meth:`close_all_connections` hangs up the open
  ones.

Threads, not asyncio: each connection has two forwarding threads, so the proxy works beside
any test code. ``close()`` stops the listener and every connection.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from urllib.parse import urlsplit, urlunsplit

__all__ = ["PgProxy"]

_STARTUP_CODES = {80877103, 80877104, 196608}  # SSLRequest, GSSENCRequest, protocol 3.0


class PgProxy:
    """Forwards 127.0.0.1:``port`` (the proxy's own, :attr:`port`) to the server at ``target_port``."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self._target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.refuse_connections = False
        self.dropped = 0
        """COMMIT answers dropped so far."""
        self._armed: bytes | None = None
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._closed = False
        threading.Thread(target=self._accept, name="pg-proxy-accept", daemon=True).start()

    def url(self, server_url: str) -> str:
        """``server_url`` with its host and port replaced by the proxy's, TLS off."""
        parts = urlsplit(server_url)
        userinfo = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        query = f"{parts.query}&sslmode=disable" if parts.query else "sslmode=disable"
        return urlunsplit((parts.scheme, f"{userinfo}127.0.0.1:{self.port}", parts.path, query, parts.fragment))

    def drop_next_commit_answer(self, marker: bytes = b"INSERT INTO records") -> None:
        """Lose the answer to the next query holding ``COMMIT`` and ``marker`` (see the module)."""
        with self._lock:
            self._armed = marker

    def close_all_connections(self) -> None:
        """Hang up every open connection, both sides (the listener stays)."""
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        self.close_all_connections()

    # -- plumbing -------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.refuse_connections:
                _shut(client)
                continue
            try:
                server = socket.create_connection(self._target, timeout=5)
                server.settimeout(None)
            except OSError:
                _shut(client)
                continue
            with self._lock:
                self._sockets.update((client, server))
            link = _Link(self, client, server)
            threading.Thread(target=link.client_to_server, name="pg-proxy-up", daemon=True).start()
            threading.Thread(target=link.server_to_client, name="pg-proxy-down", daemon=True).start()

    def _take_arm(self, query: bytes) -> bool:
        with self._lock:
            if self._armed is not None and b"COMMIT" in query and self._armed in query:
                self._armed = None
                return True
            return False


class _Link:
    """One client connection and its server connection."""

    def __init__(self, proxy: PgProxy, client: socket.socket, server: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.server = server
        self.dropping = threading.Event()
        """Set once the client sent the query whose answer is lost."""

    def client_to_server(self) -> None:
        buffer = b""
        started = False
        try:
            while True:
                data = self.client.recv(65536)
                if not data:
                    break
                buffer += data
                # Read whole messages to recognise the query; forward bytes as they came.
                while True:
                    if not started:
                        if len(buffer) < 8:
                            break
                        length, code = struct.unpack("!ii", buffer[:8])
                        if len(buffer) < length:
                            break
                        buffer = buffer[length:]
                        started = code not in _STARTUP_CODES or code == 196608
                        continue
                    if len(buffer) < 5:
                        break
                    kind, length = buffer[:1], struct.unpack("!i", buffer[1:5])[0]
                    if len(buffer) < 1 + length:
                        break
                    message, buffer = buffer[: 1 + length], buffer[1 + length :]
                    if kind == b"Q" and self.proxy._take_arm(message):
                        self.dropping.set()
                self.server.sendall(data)
        except OSError:
            pass
        self._close()

    def server_to_client(self) -> None:
        buffer = b""
        try:
            while True:
                data = self.server.recv(65536)
                if not data:
                    break
                if not self.dropping.is_set():
                    self.client.sendall(data)
                    continue
                # The answer to the armed query: swallow it until ReadyForQuery, then hang up.
                buffer += data
                while len(buffer) >= 5:
                    kind, length = buffer[:1], struct.unpack("!i", buffer[1:5])[0]
                    if len(buffer) < 1 + length:
                        break
                    buffer = buffer[1 + length :]
                    if kind == b"Z":
                        self.proxy.dropped += 1
                        self._close()
                        return
        except OSError:
            pass
        self._close()

    def _close(self) -> None:
        for sock in (self.client, self.server):
            _shut(sock)
            with self.proxy._lock:
                self.proxy._sockets.discard(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
