"""The network allowlist with real bubblewrap against local servers: listed hosts are reached
through the proxy, others are refused in words, and network=True/False keep their meaning."""

from __future__ import annotations

import http.server
import ipaddress
import logging
import os
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.sandbox.conftest import backend_class, wait_until
from toolcards import ToolFactory, WiringError, dump_cards, load_cards
from toolcards.fs._locations import workspace_dir
from toolcards.sandbox import ExecCommandParam, ExecTool
from toolcards.sandbox._egress import EgressProxy, _public
from toolcards.sandbox._hosts import HostAllowlist
from toolcards.testing import FakeObserver

HOSTS = {"allowed.test": "127.0.0.1", "other.test": "127.0.0.1", "a.wild.test": "127.0.0.1"}


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello from {self.headers.get('Host')} {self.path}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


@dataclass
class Servers:
    https_port: int
    http_port: int
    ca: Path


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    """An HTTPS and an HTTP server on 127.0.0.1; the certificate names the test hosts."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test certificate")
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    names = ",".join(f"DNS:{name}" for name in HOSTS)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-subj", "/CN=allowed.test", "-addext", f"subjectAltName={names}", "-days", "1"],
        check=True, capture_output=True,
    )  # fmt: skip
    secure = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    secure.socket = context.wrap_socket(secure.socket, server_side=True)
    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    for server in (secure, plain):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield Servers(https_port=secure.server_address[1], http_port=plain.server_address[1], ca=cert)
    finally:
        for server in (secure, plain):
            server.shutdown()
            server.server_close()


def exec_command(card: ExecTool, observer: FakeObserver) -> Callable[..., str]:
    return ToolFactory([card], observer=observer).get_commands()[ExecCommandParam]  # type: ignore[no-any-return]


def allowlisted(**extra: Any) -> ExecTool:
    return ExecTool(
        mode="bwrap",
        allowed_commands=[],
        network=["allowed.test", "*.wild.test"],
        options={"resolve": HOSTS},
        **extra,
    )


@pytest.fixture
def bwrap() -> None:
    backend_class("bwrap")  # skips where bubblewrap cannot run


@pytest.mark.usefixtures("bwrap")
def test_listed_hosts_are_reached_and_others_refused_in_words(
    servers: Servers, alice: FakeObserver, caplog: pytest.LogCaptureFixture
) -> None:
    shutil.copy(servers.ca, workspace_dir("team-1") / "ca.pem")
    run = exec_command(allowlisted(), alice)
    tls, plain = servers.https_port, servers.http_port
    with caplog.at_level(logging.WARNING, logger="toolcards.sandbox._egress"):
        out = run(
            cmd=f"curl -sS --cacert ca.pem https://allowed.test:{tls}/secure; "
            f"curl -sS http://a.wild.test:{plain}/plain; "
            f"curl -sS --cacert ca.pem https://other.test:{tls}/nope; "
            f"curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{plain}/direct; true"
        )
    assert f"hello from allowed.test:{tls} /secure" in out  # TLS end to end, the certificate checked
    assert f"hello from a.wild.test:{plain} /plain" in out
    assert "nope" not in out and "/direct" not in out.split("stderr:")[0]
    refusal = (
        f"refused CONNECT other.test:{tls}: not in the sandbox's network allowlist (allowed.test, *.wild.test); "
        "only listed hosts can be reached"
    )
    assert f"[network: {refusal}]" in out
    assert "CONNECT tunnel failed, response 403" in out
    assert any(refusal in record.getMessage() for record in caplog.records)


@pytest.mark.usefixtures("bwrap")
def test_a_python_client_reads_the_proxy_from_its_environment(servers: Servers, alice: FakeObserver) -> None:
    run = exec_command(allowlisted(), alice)
    script = (
        "import urllib.request, urllib.error\n"
        f"print(urllib.request.urlopen('http://allowed.test:{servers.http_port}/py').read().decode())\n"
        "try:\n"
        f"    urllib.request.urlopen('http://other.test:{servers.http_port}/py')\n"
        "except urllib.error.HTTPError as exc:\n"
        "    print(exc.code, exc.read().decode())\n"
    )
    (workspace_dir("team-1") / "fetch.py").write_text(script)
    out = run(cmd="python3 fetch.py")
    assert f"hello from allowed.test:{servers.http_port} /py" in out
    assert f"403 Refused GET other.test:{servers.http_port}: not in the sandbox's network allowlist" in out


@pytest.mark.usefixtures("bwrap")
def test_a_background_runs_log_shows_refusals_as_they_happen(servers: Servers, alice: FakeObserver) -> None:
    tools = {tool.name: tool for tool in ToolFactory([allowlisted(max_background_runs=1)], observer=alice).tools()}
    started = tools["exec_command"].call_sync(
        {"cmd": f"curl -sS http://other.test:{servers.http_port}/ ; sleep 30", "background": True}
    )
    run_id = started.split("Started background run ", 1)[1].split(" ", 1)[0]
    assert wait_until(lambda: "[network: refused GET other.test" in tools["exec_output"].call_sync({"run_id": run_id}))
    tools["exec_stop"].call_sync({"run_id": run_id})


@pytest.mark.usefixtures("bwrap")
def test_true_and_false_keep_their_meaning(servers: Servers, alice: FakeObserver, bob: FakeObserver) -> None:
    direct = f"curl -sS --max-time 5 http://127.0.0.1:{servers.http_port}/direct; true"
    closed = exec_command(ExecTool(mode="bwrap", allowed_commands=[], network=False), alice)(cmd=direct)
    assert "/direct" not in closed.split("stderr:")[0] and "Failed to connect" in closed
    with FakeObserver("Carol", "open-team", system=alice.system) as carol:
        opened = exec_command(ExecTool(mode="bwrap", allowed_commands=[], network=True), carol)(cmd=direct)
    assert f"hello from 127.0.0.1:{servers.http_port} /direct" in opened


@pytest.mark.usefixtures("bwrap")
def test_the_description_says_which_hosts(alice: FakeObserver) -> None:
    tool = ToolFactory([allowlisted()], observer=alice).tools()[0]
    assert tool.description.endswith("Network: only allowed.test, *.wild.test, through the proxy in HTTPS_PROXY.")


def test_what_a_backend_cannot_do_is_a_wiring_error(alice: FakeObserver) -> None:
    with pytest.raises(WiringError, match="a host allowlist needs mode 'bwrap'; mode 'local' cannot"):
        ToolFactory([ExecTool(mode="local", network=["example.com"])], observer=alice)
    with pytest.raises(WiringError, match="mode 'local' cannot cut commands off the network"):
        ToolFactory([ExecTool(mode="local", network=False)], observer=alice)
    ToolFactory([ExecTool(mode="local", network=True)], observer=alice)  # it has the network anyway


def test_the_network_is_set_in_one_place(alice: FakeObserver) -> None:
    with pytest.raises(WiringError, match=r"network=\['a.test'\] and options\['allow_network'\] disagree"):
        ToolFactory([ExecTool(mode="bwrap", network=["a.test"], options={"allow_network": True})], observer=alice)
    with pytest.raises(WiringError, match="allow_network shares the whole network; allowed_hosts limits it"):
        ToolFactory(
            [ExecTool(mode="bwrap", options={"allow_network": True, "allowed_hosts": ["a.test"]})], observer=alice
        )


def test_bad_entries_are_refused_when_the_card_is_built() -> None:
    with pytest.raises(ValidationError, match=r"bad network allowlist entries: '\*': not a host name"):
        ExecTool(mode="bwrap", network=["*", "example.com"])


def test_round_trip() -> None:
    card = ExecTool(mode="bwrap", network=["example.com", "*.example.org"], options={"resolve": HOSTS})
    assert load_cards(dump_cards([card])) == [card]


# -- the proxy on its own, through its Unix socket ---------------------------------------------


def ask(path: Path, request: bytes, *, then_close: bool = False) -> bytes:
    """Pass one end of a socket pair to the proxy, as the forwarder passes a connection; talk on the other."""
    ours, theirs = socket.socketpair()
    with socket.socket(socket.AF_UNIX) as control, ours:
        control.connect(str(path))
        socket.send_fds(control, [b"c"], [theirs.fileno()])
        theirs.close()
        ours.settimeout(10)
        ours.sendall(request)
        if then_close:
            ours.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := ours.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[EgressProxy]:
    egress = EgressProxy(tmp_path)
    yield egress
    egress.close()


def test_the_proxy_answers_what_it_cannot_pass_on(proxy: EgressProxy, servers: Servers) -> None:
    gate = proxy.open(HostAllowlist(["allowed.test"]), HOSTS)
    try:
        assert b"400 Bad Request" in ask(gate.socket_path, b"nonsense\r\n\r\n")
        assert b"CONNECT needs host:port" in ask(gate.socket_path, b"CONNECT allowed.test HTTP/1.1\r\n\r\n")
        assert b"only http:// URLs" in ask(gate.socket_path, b"GET https://allowed.test/ HTTP/1.1\r\n\r\n")
        assert b"no host in the request" in ask(gate.socket_path, b"GET / HTTP/1.1\r\n\r\n")
        assert b"400 Bad Request" in ask(gate.socket_path, b"GET / HTTP/1.1\r\n", then_close=True)  # no end of head
        # Origin form: the Host header names the host.
        answer = ask(gate.socket_path, f"GET /o HTTP/1.1\r\nHost: allowed.test:{servers.http_port}\r\n\r\n".encode())
        assert f"hello from allowed.test:{servers.http_port} /o".encode() in answer
        # Nothing listens on port 1.
        assert b"502 Bad Gateway" in ask(gate.socket_path, b"CONNECT allowed.test:1 HTTP/1.1\r\n\r\n")
        assert gate.notes() == []
        # What is not a socket is closed unread; bytes without a descriptor are ignored.
        read_end, write_end = os.pipe()
        with socket.socket(socket.AF_UNIX) as control:
            control.connect(str(gate.socket_path))
            socket.send_fds(control, [b"c"], [write_end])
            control.sendall(b"GET http://evil.test/ HTTP/1.1\r\n\r\n")
        os.close(write_end)
        assert os.read(read_end, 10) == b""  # every write end is closed: nothing was written
        os.close(read_end)
        for _ in range(3):
            ask(gate.socket_path, b"CONNECT evil.test:443 HTTP/1.1\r\n\r\n")
        assert gate.notes() == [
            "network: refused CONNECT evil.test:443: not in the sandbox's network allowlist (allowed.test); "
            "only listed hosts can be reached",
            "network: 3 requests were refused in all",
        ]
    finally:
        proxy.close_gate(gate)
    assert not gate.directory.exists()


def test_a_listed_name_that_resolves_inside_is_refused(proxy: EgressProxy, servers: Servers) -> None:
    # The proxy runs on the host: a listed name pointed at 127.0.0.1 would reach the host's own
    # services. An address listed itself, or a name mapped in resolve, is the operator's choice.
    gate = proxy.open(HostAllowlist(["localhost", "127.0.0.1", "mapped.test"]), {"mapped.test": "127.0.0.1"})
    try:
        port = servers.http_port
        refused = ask(gate.socket_path, f"GET http://localhost:{port}/ HTTP/1.1\r\n\r\n".encode())
        assert b"403 Forbidden" in refused and b"the name resolves to 127.0.0.1, an internal address" in refused
        for host in ("127.0.0.1", "mapped.test"):
            request = f"GET http://{host}:{port}/ok HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n"
            assert f"hello from {host}:{port} /ok".encode() in ask(gate.socket_path, request.encode())
        assert "resolve, to reach it" in gate.notes()[0]
    finally:
        proxy.close_gate(gate)


@pytest.mark.usefixtures("bwrap")
def test_without_the_bound_python_the_systems_runs_the_forwarder(servers: Servers, alice: FakeObserver) -> None:
    if not Path("/usr/bin/python3").exists():
        pytest.skip("no system python3 here")
    card = ExecTool(
        mode="bwrap",
        allowed_commands=[],
        network=["allowed.test"],
        options={"resolve": HOSTS, "bind_python": False},
    )
    out = exec_command(card, alice)(cmd=f"curl -sS http://allowed.test:{servers.http_port}/sys")
    assert f"hello from allowed.test:{servers.http_port} /sys" in out


def test_a_listed_name_that_resolves_to_a_shared_address_is_refused(proxy: EgressProxy) -> None:
    # 100.64.0.0/10 (carrier-grade NAT: VPN peers, a cloud's metadata service at
    # 100.100.100.200) is not "private" to Python, and no more public. The system resolver reads
    # a bare number as an IPv4 address, while the allowlist reads it as a name: a real lookup,
    # with no DNS, of a listed name that lands there.
    shared = str(int(ipaddress.IPv4Address("100.100.100.200")))
    gate = proxy.open(HostAllowlist([shared]))
    try:
        for request in (f"CONNECT {shared}:80 HTTP/1.1\r\n\r\n", f"GET http://{shared}/latest HTTP/1.1\r\n\r\n"):
            answer = ask(gate.socket_path, request.encode())
            assert b"403 Forbidden" in answer
            assert b"the name resolves to 100.100.100.200, an internal address (not a public one" in answer
        assert gate.notes()[0].startswith(f"network: refused CONNECT {shared}:80: the name resolves to 100.100.100.200")
    finally:
        proxy.close_gate(gate)


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.215.14", True),
        ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", True),
        ("100.100.100.200", False),  # shared (CGNAT)
        ("100.64.0.1", False),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("169.254.169.254", False),
        ("0.0.0.0", False),
        ("198.18.0.1", False),  # benchmarking
        ("240.0.0.1", False),  # reserved
        ("::1", False),
        ("fd00::1", False),
        ("fe80::1%lo", False),
        ("::ffff:100.100.100.200", False),  # IPv4-mapped: judged by the IPv4 address
        ("::ffff:127.0.0.1", False),
        ("::ffff:93.184.215.14", True),
        ("64:ff9b::a9fe:a9fe", False),  # NAT64 of 169.254.169.254
        ("64:ff9b::5db8:d70e", True),  # NAT64 of 93.184.215.14
    ],
)
def test_only_public_addresses_count_as_outside(address: str, public: bool) -> None:
    assert _public(address) is public


def test_a_port_out_of_range_is_a_bad_request_not_a_crash(
    proxy: EgressProxy, servers: Servers, caplog: pytest.LogCaptureFixture
) -> None:
    gate = proxy.open(HostAllowlist(["allowed.test"]), HOSTS)
    try:
        with caplog.at_level(logging.ERROR):
            # "²" is a digit to str.isdigit, not to int().
            for target in ("allowed.test:99999", "allowed.test:0", "allowed.test:" + "9" * 5000, "allowed.test:²"):
                answer = ask(gate.socket_path, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode("latin-1"))
                assert answer.startswith(b"HTTP/1.1 400 Bad Request"), (target, answer)
            assert b"CONNECT needs a port from 1 to 65535" in ask(
                gate.socket_path, b"CONNECT allowed.test:65536 HTTP/1.1\r\n\r\n"
            )
            assert b"400 Bad Request" in ask(gate.socket_path, b"GET http://allowed.test:99999/ HTTP/1.1\r\n\r\n")
            # The proxy still serves the next request.
            host = f"allowed.test:{servers.http_port}"
            answer = ask(gate.socket_path, f"GET http://{host}/after HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            assert f"hello from {host} /after".encode() in answer
        assert not caplog.records
    finally:
        proxy.close_gate(gate)


def test_a_name_dns_cannot_encode_is_answered(proxy: EgressProxy, caplog: pytest.LogCaptureFixture) -> None:
    # A wildcard lets any name below it through the allowlist, even one whose labels the
    # resolver refuses to encode (UnicodeError, not OSError).
    gate = proxy.open(HostAllowlist(["*.wild.test"]))
    try:
        with caplog.at_level(logging.ERROR):
            for host in ("a" * 64 + ".wild.test", "a..wild.test"):
                answer = ask(gate.socket_path, f"CONNECT {host}:443 HTTP/1.1\r\n\r\n".encode())
                assert answer.startswith(b"HTTP/1.1 502 Bad Gateway") and b"Could not resolve" in answer, answer
        assert not caplog.records
    finally:
        proxy.close_gate(gate)
