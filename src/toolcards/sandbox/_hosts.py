"""A network allowlist: the hosts a sandboxed command may reach, and the check of one.

Entries, matched without regard to case and a trailing dot:

* ``example.com`` — that host only (not its subdomains);
* ``*.example.org`` — any host below ``example.org`` (``a.example.org``, ``a.b.example.org``),
  not ``example.org`` itself: list both to allow both;
* an IP address (``10.0.0.5``, ``[::1]``) — that address, when a command names it;
* any of these with ``:port`` — that port only; without one, any port.

Nothing else: no ``*`` alone, no wildcard inside a name, no schemes or paths. A bad entry is
refused when the card binds (:class:`HostAllowlist` raises ``ValueError`` naming each one).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["HostAllowlist", "HostPattern"]

_LABEL = r"(?!-)[a-z0-9_-]{1,63}(?<!-)"
_NAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")


@dataclass(frozen=True, kw_only=True)
class HostPattern:
    """One entry of an allowlist."""

    text: str
    """The entry as given."""
    host: str
    """The host, lowercased, without the ``*.`` of a wildcard or the brackets of an IPv6 address."""
    wildcard: bool
    """``*.host``: any host below ``host``."""
    port: int | None
    """The one port allowed, or ``None`` for any."""

    def matches(self, host: str, port: int) -> bool:
        """Whether ``host`` (normalised) on ``port`` is allowed by this entry."""
        if self.port is not None and port != self.port:
            return False
        if self.wildcard:
            return host.endswith("." + self.host)
        return host == self.host


def normalise_host(host: str) -> str:
    """``host`` lowercased, without a trailing dot or the brackets of an IPv6 literal."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise ValueError("text after ']' must be ':port'")
        return host, _port(rest[1:]) if rest else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, _port(port)
    return entry, None


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"port {text!r} is not a number from 1 to 65535")
    return int(text)


def parse_pattern(entry: str) -> HostPattern:
    """One entry, checked.

    Raises:
        ValueError: it is not a host name, ``*.`` name or IP address with an optional port.
    """
    text = entry.strip()
    host, port = _split_port(text.lower().rstrip("."))
    wildcard = host.startswith("*.")
    if wildcard:
        host = host[2:]
    host = host.rstrip(".")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _NAME.match(host) or "*" in host:
            raise ValueError("not a host name, '*.' followed by a name, or an IP address") from None
    else:
        if wildcard:
            raise ValueError("'*.' needs a name after it, not an address")
    return HostPattern(text=text, host=host, wildcard=wildcard, port=port)


class HostAllowlist:
    """The hosts a command may reach (see the module's docstring for the entries)."""

    def __init__(self, entries: Sequence[str]) -> None:
        """Parse ``entries``.

        Raises:
            ValueError: one or more entries are malformed; the message names each and why.
        """
        patterns: list[HostPattern] = []
        problems: list[str] = []
        for entry in entries:
            try:
                patterns.append(parse_pattern(entry))
            except ValueError as exc:
                problems.append(f"{entry!r}: {exc}")
        if problems:
            raise ValueError(
                "bad network allowlist entries: " + "; ".join(problems) + ". Use names such as 'example.com', "
                "'*.example.org' or 'example.com:443'."
            )
        self.patterns = tuple(patterns)

    def allows(self, host: str, port: int) -> bool:
        """Whether a command may connect to ``host`` on ``port``."""
        name = normalise_host(host)
        return any(pattern.matches(name, port) for pattern in self.patterns)

    def __str__(self) -> str:
        return ", ".join(pattern.text for pattern in self.patterns) or "(no hosts)"
