"""The stateless 2026-07-28 protocol's rules, for the stdio server (which does not import the SDK).

In this protocol there is no handshake: every request carries its own envelope in
``params._meta`` (the protocol version and the client's capabilities, usually its name), and
a client learns about the server with ``server/discover``. What changes against the handshake
protocol, all of it here:

* :func:`envelope` checks a request's envelope in the SDK's order: the two required keys
  (else ``-32602``), then a supported version (else ``-32022`` naming the supported ones);
* every result says ``resultType: "complete"`` (unless it is an ``input_required`` one) and
  carries the server's identity in ``_meta["io.modelcontextprotocol/serverInfo"]``; list
  results, reads and the discovery also carry cache hints (``ttlMs: 0``, ``cacheScope:
  "private"``: never reuse them, never share them) — :func:`modern_result`;
* the methods served are :data:`MODERN_METHODS`; ``ping``, ``initialize``,
  ``logging/setLevel`` and the ``resources/(un)subscribe`` pair are not (changes reach
  ``subscriptions/listen`` streams instead), and a missing resource is ``-32602``.

The SDK is the reference: a test compares these answers with its server's, method by method.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolcards.server._jsonrpc import INVALID_PARAMS, RequestError

__all__ = [
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "MODERN_METHODS",
    "MODERN_VERSION",
    "SERVER_INFO_KEY",
    "SUBSCRIPTION_ID_KEY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Envelope",
    "envelope",
    "modern_result",
]

MODERN_VERSION = "2026-07-28"
"""The stateless protocol version served (the SDK's ``MODERN_PROTOCOL_VERSIONS``)."""
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
UNSUPPORTED_PROTOCOL_VERSION = -32022
MODERN_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "subscriptions/listen",
    }
)
CACHEABLE = frozenset(
    {"server/discover", "tools/list", "resources/list", "resources/templates/list", "resources/read", "prompts/list"}
)


@dataclass(frozen=True, kw_only=True)
class Envelope:
    """What a stateless request says about its client."""

    version: str
    client_name: str | None
    capabilities: Mapping[str, Any]


def envelope(params: Mapping[str, Any] | None) -> Envelope:
    """The envelope of a stateless request.

    Raises:
        RequestError: a required key is missing (``-32602``), or the version is not served
            (``-32022``, with the supported versions).
    """
    meta = (params or {}).get("_meta")
    if not isinstance(meta, Mapping):
        raise RequestError(
            INVALID_PARAMS,
            "params._meta must be an object carrying the required "
            f"{PROTOCOL_VERSION_KEY!r} and {CLIENT_CAPABILITIES_KEY!r} envelope keys",
        )
    missing = [key for key in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if key not in meta]
    if missing:
        raise RequestError(
            INVALID_PARAMS, f"params._meta is missing the required envelope key(s): {', '.join(missing)}"
        )
    version = meta[PROTOCOL_VERSION_KEY]
    if not isinstance(version, str):
        raise RequestError(INVALID_PARAMS, f"{PROTOCOL_VERSION_KEY} must be a string")
    if version != MODERN_VERSION:
        raise RequestError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": [MODERN_VERSION], "requested": version},
        )
    info = meta.get(CLIENT_INFO_KEY)
    name = info.get("name") if isinstance(info, Mapping) else None
    capabilities = meta[CLIENT_CAPABILITIES_KEY]
    return Envelope(
        version=version,
        client_name=name if isinstance(name, str) else None,
        capabilities=capabilities if isinstance(capabilities, Mapping) else {},
    )


def modern_result(method: str, result: Mapping[str, Any], server_info: Mapping[str, Any]) -> dict[str, Any]:
    """``result`` as the stateless protocol answers it (see the module docstring)."""
    answer = dict(result)
    answer.setdefault("resultType", "complete")
    if method in CACHEABLE and answer["resultType"] == "complete":
        answer.setdefault("ttlMs", 0)
        answer.setdefault("cacheScope", "private")
    meta = answer.get("_meta")
    answer["_meta"] = {**(meta if isinstance(meta, Mapping) else {}), SERVER_INFO_KEY: dict(server_info)}
    return answer
