"""Network allowlist entries: what each form matches, and the refusal of malformed ones."""

from __future__ import annotations

import pytest

from toolcards.sandbox._hosts import HostAllowlist


@pytest.mark.parametrize(
    ("entries", "host", "port", "allowed"),
    [
        (["example.com"], "example.com", 443, True),
        (["example.com"], "EXAMPLE.com.", 80, True),
        (["example.com"], "api.example.com", 443, False),
        (["*.example.org"], "a.example.org", 443, True),
        (["*.example.org"], "a.b.example.org", 443, True),
        (["*.example.org"], "example.org", 443, False),
        (["*.example.org"], "badexample.org", 443, False),
        (["example.com:8443"], "example.com", 8443, True),
        (["example.com:8443"], "example.com", 443, False),
        (["10.0.0.5"], "10.0.0.5", 22, True),
        (["[::1]:8080"], "[::1]", 8080, True),
        (["[::1]:8080"], "::1", 8081, False),
        ([], "example.com", 443, False),
    ],
)
def test_what_an_entry_matches(entries: list[str], host: str, port: int, allowed: bool) -> None:
    assert HostAllowlist(entries).allows(host, port) is allowed


def test_every_bad_entry_is_named_at_once() -> None:
    with pytest.raises(ValueError) as caught:
        HostAllowlist(["ok.example", "*", "a.*.b", "http://x.com", "x.com:99999", "*.10.0.0.1", "[::1]x"])
    message = str(caught.value)
    for bad in ("'*'", "'a.*.b'", "'http://x.com'", "'x.com:99999'", "'*.10.0.0.1'", "'[::1]x'"):
        assert bad in message
    assert "'ok.example'" not in message and "Use names such as 'example.com'" in message


def test_it_reads_as_its_entries() -> None:
    assert str(HostAllowlist(["example.com", "*.example.org"])) == "example.com, *.example.org"
    assert str(HostAllowlist([])) == "(no hosts)"
