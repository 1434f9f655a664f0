"""The options of a command that serves HTTP: ``--host``, ``--port``, ``--token``, ``--no-token``,
and the limits on slow clients (``--header-timeout``, ``--body-timeout``, ``--body-min-rate``,
``--max-header-bytes``).

``toolcards serve --transport http`` and ``toolcards dashboard`` share them, with the same rules:
loopback by default, a token on every request (given, else generated and printed once),
``--no-token`` only on loopback, and a client that sends too slowly dropped
(:class:`~toolcards.server._client_limits.ClientLimits`). A bad value is a usage error (exit
code 2).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from toolcards.cli._console import UsageError
from toolcards.cli._number_options import port_number, positive_integer, positive_number

if TYPE_CHECKING:
    from toolcards.server._client_limits import ClientLimits

__all__ = [
    "HTTP_OPTIONS",
    "add_http_options",
    "check_access",
    "client_limits",
    "token_option",
]


HTTP_OPTIONS = (
    "--host",
    "--port",
    "--token",
    "--no-token",
    "--header-timeout",
    "--body-timeout",
    "--body-min-rate",
    "--max-header-bytes",
)
"""The options :func:`add_http_options` adds, as written on the command line."""


def add_http_options(parser: argparse.ArgumentParser, *, default_port: int, no_token_means: str) -> None:
    """Add :data:`HTTP_OPTIONS` to ``parser``; ``no_token_means`` says what ``--no-token`` lets
    every local user do (for its help)."""
    from toolcards.server._http import DEFAULT_HOST

    parser.add_argument("--host", default=DEFAULT_HOST, help=f"HTTP bind address (default {DEFAULT_HOST})")
    parser.add_argument(
        "--port", type=port_number, default=default_port, help=f"HTTP port (default {default_port}; 0: a free one)"
    )
    parser.add_argument(
        "--token",
        type=token_option,
        default=os.environ.get("TOOLCARDS_TOKEN") or None,
        help="the token every HTTP request must carry (default: $TOOLCARDS_TOKEN, else one generated and printed)",
    )
    parser.add_argument(
        "--no-token",
        action="store_true",
        help=f"serve HTTP without a token: every local user can {no_token_means} (loopback only)",
    )
    from toolcards.server._client_limits import ClientLimits

    limits = ClientLimits()
    parser.add_argument(
        "--header-timeout",
        type=positive_number,
        default=limits.header_timeout_s,
        metavar="SECONDS",
        help="close a connection whose request headers have not all arrived this long after it opened "
        f"or after its previous answer (default {limits.header_timeout_s:g})",
    )
    parser.add_argument(
        "--body-timeout",
        type=positive_number,
        default=limits.body_timeout_s,
        metavar="SECONDS",
        help="grace a request body has before it must keep up with --body-min-rate "
        f"(default {limits.body_timeout_s:g})",
    )
    parser.add_argument(
        "--body-min-rate",
        type=positive_number,
        default=limits.body_min_rate,
        metavar="BYTES",
        help="bytes per second a request body must arrive at, on average, after its grace; a slower "
        f"client is disconnected (default {limits.body_min_rate:g}). Answers are not timed",
    )
    parser.add_argument(
        "--max-header-bytes",
        type=positive_integer,
        default=limits.max_header_bytes,
        metavar="BYTES",
        help=f"largest request line and headers, together; more is answered 400 (default {limits.max_header_bytes})",
    )


def client_limits(args: argparse.Namespace) -> ClientLimits:
    """The :class:`~toolcards.server._client_limits.ClientLimits` the options give."""
    from toolcards.server._client_limits import ClientLimits

    return ClientLimits(
        header_timeout_s=args.header_timeout,
        body_timeout_s=args.body_timeout,
        body_min_rate=args.body_min_rate,
        max_header_bytes=args.max_header_bytes,
    )


def token_option(text: str) -> str:
    """A token as HTTP carries it: printable ASCII without spaces. Never echoed in errors."""
    if not text:
        raise argparse.ArgumentTypeError(
            "the token (from --token or TOOLCARDS_TOKEN) is empty: give one, or leave it out to get a generated one"
        )
    if not all(33 <= ord(ch) <= 126 for ch in text):
        raise argparse.ArgumentTypeError(
            "the token (from --token or TOOLCARDS_TOKEN) must be printable ASCII without spaces, "
            "e.g. from: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return text


def check_access(args: argparse.Namespace, *, reach: str) -> None:
    """Refuse ``--no-token`` beside a token, or off loopback, where anyone could ``reach``."""
    from toolcards.server._http import is_loopback

    if not args.no_token:
        return
    if args.token:
        raise UsageError("--no-token contradicts the token given (by --token or TOOLCARDS_TOKEN): drop one of them.")
    if not is_loopback(args.host):
        raise UsageError(
            f"--no-token is refused on --host {args.host}: anyone who can reach it could {reach}. "
            "Drop --no-token (a token is then generated and printed), or bind 127.0.0.1."
        )
