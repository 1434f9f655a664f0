"""The host side of a network allowlist: a proxy that lets a sandboxed command reach listed hosts only.

A command with an allowlist runs in a network namespace of its own (``--unshare-net``: a
private loopback, no DNS). Its only way out is a Unix socket bound into the sandbox, on which
this proxy listens: a forwarder inside (:mod:`.forwarder`) listens on ``127.0.0.1:3128``, named
by ``HTTP_PROXY``/``HTTPS_PROXY``, and hands each accepted connection's descriptor over that
socket. Each request is checked here: ``CONNECT host:port`` against the list, then a byte
tunnel (TLS stays end to end); plain ``GET http://host/...`` by the URL's host, passed on with
``Connection: close`` so each request is checked on a connection of its own.

A host not on the list gets ``403 Forbidden`` with a reason, logged at WARNING and kept on the
command's :class:`EgressGate`, which becomes a note of its result. Names are resolved here, on
the host (``resolve`` pins a name to an address, like curl's ``--resolve``), and a name
resolving to an internal address (any that is not public: loopback, private, shared,
link-local, reserved) is refused too, since the proxy runs on the host. A request the proxy
cannot serve is answered (400, 502) and its connection closed: nothing a command sends ends
a connection's task with an exception. One :class:`EgressProxy` per sandbox runs one event
loop thread, started at the first command needing it; each command's gate closes when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from toolcards.sandbox._hosts import HostAllowlist, normalise_host

__all__ = ["SOCKET_NAME", "EgressGate", "EgressProxy"]

logger = logging.getLogger(__name__)

SOCKET_NAME = "proxy.sock"
"""The gate's socket, in the directory bound into the sandbox."""

_HEAD_LIMIT = 16_384
_HEAD_TIMEOUT_S = 30.0
_CONNECT_TIMEOUT_S = 10.0
_MAX_KEPT_REFUSALS = 20
_HOP_HEADERS = frozenset({"proxy-connection", "proxy-authorization", "connection", "keep-alive"})


class EgressGate:
    """One command's way out: its socket, its allowlist, what was refused. Thread-safe."""

    def __init__(
        self,
        directory: Path,
        allowlist: HostAllowlist,
        resolve: Mapping[str, str],
        on_refusal: Callable[[str], None] | None,
    ) -> None:
        self.directory = directory
        """Holds :data:`SOCKET_NAME`; bind it into the sandbox."""
        self.allowlist = allowlist
        self.resolve = {normalise_host(name): address for name, address in resolve.items()}
        self._on_refusal = on_refusal
        self._lock = threading.Lock()
        self._refusals: list[str] = []
        self._refused = 0
        self._sockets: list[socket.socket] = []
        """The listening socket and the forwarders' connections (the proxy's loop owns them)."""
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def socket_path(self) -> Path:
        """The Unix socket on the host."""
        return self.directory / SOCKET_NAME

    def refuse(self, message: str) -> None:
        """Record and log one refusal (the first :data:`_MAX_KEPT_REFUSALS` distinct ones are kept)."""
        logger.warning("sandbox network: %s", message)
        with self._lock:
            self._refused += 1
            keep = message not in self._refusals and len(self._refusals) < _MAX_KEPT_REFUSALS
            if keep:
                self._refusals.append(message)
        if keep and self._on_refusal is not None:
            self._on_refusal(message)

    def notes(self) -> list[str]:
        """Sentences for the command's result: each distinct refusal, and how many there were."""
        with self._lock:
            notes = [f"network: {message}" for message in self._refusals]
            if self._refused > len(self._refusals):
                notes.append(f"network: {self._refused} requests were refused in all")
            return notes


class EgressProxy:
    """The proxy of one sandbox: an event loop thread serving every command's gate."""

    def __init__(self, directory: Path) -> None:
        """Gates' sockets are made in ``directory`` (the sandbox's private scratch directory)."""
        self.directory = directory
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="sandbox-egress", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def open(
        self,
        allowlist: HostAllowlist,
        resolve: Mapping[str, str] | None = None,
        *,
        on_refusal: Callable[[str], None] | None = None,
    ) -> EgressGate:
        """A new gate listening on its own socket; close it when the command has ended.

        ``on_refusal(message)`` hears each distinct refusal as it happens (a background run's
        log). Blocks until the socket listens.

        Raises:
            OSError: the socket could not be made.
        """
        loop = self._running_loop()
        directory = Path(tempfile.mkdtemp(prefix="egress-", dir=self.directory))
        gate = EgressGate(directory, allowlist, resolve or {}, on_refusal)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(gate.socket_path))
            listener.listen(16)
            listener.setblocking(False)
        except OSError:
            listener.close()
            shutil.rmtree(directory, ignore_errors=True)
            raise

        def listen() -> None:
            gate._sockets.append(listener)
            loop.add_reader(listener, _accept_forwarder, loop, gate, listener)

        done = asyncio.run_coroutine_threadsafe(_call(listen), loop)
        done.result(timeout=10)
        return gate

    def close_gate(self, gate: EgressGate) -> None:
        """Stop listening, end the gate's connections, remove its socket. Never raises."""
        loop = self._loop
        if loop is not None and not loop.is_closed():

            async def shut() -> None:
                for sock in gate._sockets:
                    loop.remove_reader(sock)
                    sock.close()
                for task in list(gate._tasks):
                    task.cancel()

            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(shut(), loop).result(timeout=5)
        shutil.rmtree(gate.directory, ignore_errors=True)

    def close(self) -> None:
        """Stop the event loop thread (at the sandbox's stop). Never raises."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        with contextlib.suppress(RuntimeError):
            loop.close()


async def _call(func: Callable[[], None]) -> None:
    func()


# -- on the proxy's loop: forwarders, the connections they pass, one request each ---------------


def _accept_forwarder(loop: asyncio.AbstractEventLoop, gate: EgressGate, listener: socket.socket) -> None:
    try:
        control, _ = listener.accept()
    except (BlockingIOError, InterruptedError):
        return
    except OSError:
        return
    control.setblocking(False)
    gate._sockets.append(control)
    loop.add_reader(control, _receive_clients, loop, gate, control)


def _receive_clients(loop: asyncio.AbstractEventLoop, gate: EgressGate, control: socket.socket) -> None:
    """Take the connections a forwarder passed (one descriptor a message) and serve each."""
    try:
        message, fds, _, _ = socket.recv_fds(control, 64, 8)
    except (BlockingIOError, InterruptedError):
        return
    except OSError:
        message, fds = b"", []
    if not message and not fds:  # the forwarder is gone
        loop.remove_reader(control)
        control.close()
        return
    for fd in fds:
        try:
            client = socket.socket(fileno=fd)
        except OSError:  # not a socket: whoever sent it gets nothing
            with contextlib.suppress(OSError):
                os.close(fd)
            continue
        if client.type != socket.SOCK_STREAM:
            client.close()
            continue
        client.setblocking(False)
        task = loop.create_task(_serve_socket(gate, client))
        gate._tasks.add(task)
        task.add_done_callback(gate._tasks.discard)


async def _serve_socket(gate: EgressGate, client: socket.socket) -> None:
    try:
        reader, writer = await asyncio.open_connection(sock=client, limit=_HEAD_LIMIT)
    except OSError:
        client.close()
        return
    try:
        await _serve(gate, reader, writer)
    except Exception:
        # A task's exception is otherwise reported only when the task is collected, if at
        # all; the connection is closed by _serve either way.
        logger.exception("sandbox network: a connection through the proxy failed")


async def _serve(gate: EgressGate, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    upstream: asyncio.StreamWriter | None = None
    try:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _HEAD_TIMEOUT_S)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
            await _reply(writer, 400, "The proxy could not read a request head.")
            return
        try:
            method, host, port, forward = _parse(head)
        except ValueError as exc:
            await _reply(writer, 400, f"The proxy cannot pass this request on: {exc}.")
            return
        if not gate.allowlist.allows(host, port):
            message = (
                f"refused {method} {host}:{port}: not in the sandbox's network allowlist ({gate.allowlist}); "
                "only listed hosts can be reached"
            )
            gate.refuse(message)
            await _reply(writer, 403, message[0].upper() + message[1:] + ".")
            return
        try:
            address = await _address_of(gate, host, port)
        except (OSError, UnicodeError) as exc:  # UnicodeError: an empty or over-long label
            await _reply(writer, 502, f"Could not resolve {host}: {exc}.")
            return
        except _Internal as exc:
            message = (
                f"refused {method} {host}:{port}: the name resolves to {exc.address}, an internal address "
                "(not a public one: loopback, private, shared, link-local or reserved); list the address itself, "
                "or map the name in the options' resolve, to reach it"
            )
            gate.refuse(message)
            await _reply(writer, 403, message[0].upper() + message[1:] + ".")
            return
        except Exception as exc:
            await _unexpected(writer, f"Could not resolve {host}", exc)
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(address, port), _CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            await _reply(writer, 502, f"Could not connect to {host}:{port}: {exc or type(exc).__name__}.")
            return
        except Exception as exc:
            await _unexpected(writer, f"Could not connect to {host}:{port}", exc)
            return
        upstream = up_writer
        if forward is None:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            up_writer.write(forward)
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
    except (ConnectionError, OSError):
        pass
    finally:
        for stream in (writer, upstream):
            if stream is not None:
                stream.close()


class _Internal(Exception):
    """A listed name resolved to an internal address."""

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.address = address


async def _address_of(gate: EgressGate, host: str, port: int) -> str:
    """The address to connect to for ``host``: its ``resolve`` mapping, the address it is, or
    the first address DNS gives.

    A name that DNS resolves to an internal address, any that is not public
    (:func:`_public`: the host's loopback, a private or shared network such as 100.64.0.0/10,
    where cloud metadata services and VPN peers live, link-local, reserved ranges), is
    refused: the proxy runs on the host, so a name under a listed wildcard that someone points
    at 127.0.0.1 would otherwise reach the host's own services. An address listed itself, or a
    mapping in ``resolve``, is the operator's choice and is kept.

    Raises:
        OSError: the name does not resolve.
        UnicodeError: the name cannot be encoded for DNS (an empty or over-long label).
        _Internal: it resolves to an internal address.
    """
    name = normalise_host(host)
    mapped = gate.resolve.get(name)
    if mapped is not None:
        return mapped
    try:
        ipaddress.ip_address(name)
    except ValueError:
        pass
    else:
        return name  # an address the allowlist names
    infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
    addresses = [str(info[4][0]) for info in infos]
    for address in addresses:
        if not _public(address):
            raise _Internal(address)
    if not addresses:
        raise OSError(f"no address for {name}")
    return addresses[0]


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
"""The well-known NAT64 prefix: its last 32 bits are the IPv4 address a gateway connects to."""


def _public(address: str) -> bool:
    """Whether ``address`` is a public (globally reachable) one, by IANA's special-purpose
    registries; an IPv4 address inside an IPv6 one (``::ffff:a.b.c.d``, NAT64) is judged by
    the IPv4 address it leads to. A scope id (``fe80::1%eth0``) is dropped first."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped.is_global
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF).is_global
    return ip.is_global


def _parse(head: bytes) -> tuple[str, str, int, bytes | None]:
    """``(method, host, port, head to forward)`` of a proxy request; ``None`` to forward for CONNECT.

    Raises:
        ValueError: not a request a forward proxy serves; the message says what is wrong.
    """
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise ValueError("a malformed request line")
    method, target, version = parts
    if method.upper() == "CONNECT":
        name, _, number = target.rpartition(":")
        if not name or not (number.isascii() and number.isdigit()):
            raise ValueError(f"CONNECT needs host:port, got {target!r}")
        port = int(number) if len(number) <= 5 else 0
        if not 0 < port < 65536:
            raise ValueError(f"CONNECT needs a port from 1 to 65535, got {target!r}")
        return "CONNECT", name, port, None
    url = urlsplit(target)
    headers = [line for line in lines[1:] if line]
    if url.scheme:
        if url.scheme != "http" or not url.hostname:
            raise ValueError(f"only http:// URLs are passed on as plain requests (use CONNECT for {url.scheme})")
        host, port = url.hostname, url.port or 80
    else:  # origin form: the Host header says where
        named = [line.split(":", 1)[1].strip() for line in headers if line.lower().startswith("host:")]
        if not named:
            raise ValueError("no host in the request")
        parsed = urlsplit(f"//{named[0]}")
        if not parsed.hostname:
            raise ValueError(f"a bad Host header {named[0]!r}")
        host, port = parsed.hostname, parsed.port or 80
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [line for line in headers if line.split(":", 1)[0].strip().lower() not in _HOP_HEADERS]
    forward = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""])
    return method, host, port, forward.encode("latin-1")


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


async def _unexpected(writer: asyncio.StreamWriter, what: str, exc: Exception) -> None:
    """Answer 502 for an error no request should cause (``connect()`` refusing a port, say),
    and log it with its traceback: the command gets an answer, the operator a bug to report."""
    logger.error("sandbox network: %s: %s: %s", what, type(exc).__name__, exc, exc_info=exc)
    await _reply(writer, 502, f"{what}: {type(exc).__name__}: {exc}.")


async def _reply(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    reasons = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}
    body = (message + "\n").encode()
    writer.write(
        f"HTTP/1.1 {status} {reasons[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(ConnectionError, OSError):
        await writer.drain()
