"""Which key names a ``tools/call`` when its client sends it again (exactly-once writes).

See :mod:`toolcards.core._idempotency` for what the pipeline does with the key.
"""

from __future__ import annotations

from typing import Any

__all__ = ["IDEMPOTENCY_META_KEYS", "idempotency_key"]


IDEMPOTENCY_META_KEYS = ("io.toolcards/idempotency-key", "idempotencyKey")
"""``_meta`` keys of a ``tools/call`` request that carry the client's idempotency key."""


def idempotency_key(meta: Any, session_id: str | None, request_id: Any) -> str | None:
    """The client's key of a ``tools/call``, the same when the client sends the call again.

    A key the client gives in ``_meta`` (:data:`IDEMPOTENCY_META_KEYS`) wins. Otherwise, on
    an HTTP session (``Mcp-Session-Id``), the session and the JSON-RPC request id: a client
    that lost the answer sends the request again with its id, and ids are unique in a
    session. A request id alone names nothing across connections (every stdio client counts
    from 1), so without a session there is no key.
    """
    if isinstance(meta, dict):
        for name in IDEMPOTENCY_META_KEYS:
            value = meta.get(name)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                return f"client:{value}"
    if session_id and request_id is not None:
        return f"session:{session_id}/{request_id}"
    return None
