"""Approval by asking: a tool that ``requires_approval`` runs once the client's user accepts it.

The pipeline's approval step (:mod:`toolcards.core._approval`) runs after the arguments were
validated and the guards ran, so the user is asked about exactly the call that would run.
Where the client declared the ``elicitation`` capability, the server makes an approver
current for the call (:func:`~toolcards.core._approval.approving`) that asks it:

* on the handshake protocol, with an ``elicitation/create`` request (form mode, no fields:
  the user sees the agent, the tool, the arguments that matter, and accepts or declines):
  :class:`AskingApprover`, which waits in the call's worker thread;
* on the stateless 2026-07-28 protocol, where a server sends no requests, by answering the
  ``tools/call`` with an ``input_required`` result carrying the same elicitation
  (:class:`ApprovalNeeded`); the client asks its user and sends the call again with the
  answer and the ``requestState`` it got, which :class:`PendingApprovals` matches to the call
  it was asked about (same agent, tool and arguments) before the call runs, once.

``accept`` runs the call once. ``decline``, ``cancel`` or no answer within the timeout refuse
it in words the model reads (``ApprovalRequired``); so does an answer to another call.
Without the capability nothing is asked: the call is refused as before, or runs under
``--approve-all``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolcards.core._approval import ApprovalRequest
from toolcards.core._cancel import CANCELLED_MESSAGE, current_cancel
from toolcards.errors import ApprovalRequired, CallCancelled

__all__ = [
    "APPROVAL_INPUT",
    "DEFAULT_APPROVAL_TIMEOUT_S",
    "AnsweredApproval",
    "ApprovalNeeded",
    "AskingApprover",
    "PendingApprovals",
    "approval_elicitation",
    "arguments_digest",
    "refusal",
]

APPROVAL_INPUT = "approval"
"""The key of the approval in an ``input_required`` result's ``inputRequests``."""
DEFAULT_APPROVAL_TIMEOUT_S = 300.0
"""How long the user may take to answer before the call is refused."""
PENDING_TTL_S = 900.0
"""How long an approval asked on the stateless protocol waits for the call to come back."""

Ask = Callable[[dict[str, Any]], Awaitable[Mapping[str, Any]]]
"""Sends ``elicitation/create`` with these params to the client; returns its result."""


def approval_elicitation(request: ApprovalRequest) -> dict[str, Any]:
    """The ``elicitation/create`` params asking the user about ``request`` (form mode, no fields)."""
    summary = request.tool.description.strip().split("\n", 1)[0]
    message = (
        f"{request.describe()}\n\n{request.tool.name}: {summary}\n"
        "Accept to run this call once, or decline to refuse it."
    )
    return {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": {}}}


def arguments_digest(tool_name: str, args: Mapping[str, Any]) -> str:
    """A digest of one call (tool and validated arguments), to match an answer to its question."""
    import pydantic_core

    text = pydantic_core.to_json({"tool": tool_name, "args": dict(args)}, fallback=repr)
    return hashlib.blake2b(text, digest_size=16).hexdigest()


def refusal(tool_name: str, action: str | None) -> ApprovalRequired:
    """The refusal of a call whose user answered ``action`` (``decline``, ``cancel``) or nothing."""
    if action == "decline":
        return ApprovalRequired(
            f"The user declined this call of {tool_name}, so it did not run. "
            "Do not repeat it; ask the user how to proceed or continue without it."
        )
    if action == "cancel":
        return ApprovalRequired(
            f"The user dismissed the request to approve {tool_name} without approving it, so it did not run. "
            "Ask the user before trying again, or continue without it."
        )
    return ApprovalRequired(
        f"Nobody approved this call of {tool_name} in time, so it did not run. "
        "Tell the user what you wanted to do and why, and continue without it."
    )


class AskingApprover:
    """An approver that asks the client's user through ``ask``, run on ``loop``.

    It is called in the call's worker thread and blocks it until the answer, the timeout,
    or the call's cancellation (which withdraws the question).
    """

    def __init__(self, ask: Ask, loop: asyncio.AbstractEventLoop, *, timeout_s: float) -> None:
        self.ask = ask
        self.loop = loop
        self.timeout_s = timeout_s

    def __call__(self, request: ApprovalRequest) -> bool:
        from toolcards.server._tasks import awaiting_input

        with awaiting_input() as meta:
            return self._asked(request, {**approval_elicitation(request), **({"_meta": meta} if meta else {})})

    def _asked(self, request: ApprovalRequest, params: dict[str, Any]) -> bool:
        future = asyncio.run_coroutine_threadsafe(_awaited(self.ask(params)), self.loop)
        token = current_cancel()

        def withdraw() -> None:
            future.cancel()  # the call was cancelled: the question is withdrawn

        forget = token.on_cancel(withdraw) if token is not None else None
        try:
            answer = future.result(timeout=self.timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise refusal(request.tool.name, None) from None
        except concurrent.futures.CancelledError:
            raise CallCancelled(CANCELLED_MESSAGE) from None
        except Exception as exc:
            raise ApprovalRequired(
                f"{request.tool.name} needs a human's approval and the client could not ask for it ({exc}), "
                "so it did not run. Tell the user what you wanted to do and why."
            ) from exc
        finally:
            if forget is not None:
                forget()
        action = answer.get("action")
        if action == "accept":
            return True
        raise refusal(request.tool.name, action if isinstance(action, str) else None)


async def _awaited(awaitable: Awaitable[Mapping[str, Any]]) -> Mapping[str, Any]:
    return await awaitable


class ApprovalNeeded(ApprovalRequired):
    """Raised by :class:`PendingApprovals.asker`'s approver: the client must ask its user and
    send the call again (the stateless protocol's ``input_required`` result)."""

    def __init__(self, request_state: str, elicitation: dict[str, Any]) -> None:
        super().__init__("This call waits for the user's approval.")
        self.request_state = request_state
        self.elicitation = elicitation

    def result(self) -> dict[str, Any]:
        """The ``tools/call`` result asking for the approval, in wire form."""
        return {
            "resultType": "input_required",
            "inputRequests": {APPROVAL_INPUT: {"method": "elicitation/create", "params": self.elicitation}},
            "requestState": self.request_state,
        }


@dataclass(frozen=True, kw_only=True)
class _Pending:
    agent: str
    digest: str
    expires: float


class PendingApprovals:
    """Approvals asked through ``input_required`` results, waiting for the call to come back.

    Each question gets a random ``requestState``; the answer counts only for the call it was
    asked about (same agent, tool and arguments), once, within :data:`PENDING_TTL_S`.
    Thread-safe.
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}

    def asker(self, agent: str) -> Callable[[ApprovalRequest], bool]:
        """An approver that records the question and raises :class:`ApprovalNeeded`."""

        def ask(request: ApprovalRequest) -> bool:
            state = secrets.token_urlsafe(24)
            now = self._clock()
            with self._lock:
                self._pending = {key: p for key, p in self._pending.items() if p.expires > now}
                self._pending[state] = _Pending(
                    agent=agent, digest=arguments_digest(request.tool.name, request.args), expires=now + PENDING_TTL_S
                )
            raise ApprovalNeeded(state, approval_elicitation(request))

        return ask

    def answered(self, agent: str, request_state: str | None, answer: Any) -> AnsweredApproval:
        """The approver for a call sent again with ``answer`` to the question ``request_state``."""
        with self._lock:
            pending = self._pending.pop(request_state, None) if isinstance(request_state, str) else None
        valid = pending is not None and pending.agent == agent and pending.expires > self._clock()
        action = answer.get("action") if isinstance(answer, Mapping) else None
        return AnsweredApproval(digest=pending.digest if valid and pending else None, action=action)


@dataclass(frozen=True, kw_only=True)
class AnsweredApproval:
    """The approver of a call whose user already answered: it approves exactly that call."""

    digest: str | None
    """The call the answer is for; ``None`` when the answer matched no question."""
    action: Any

    def __call__(self, request: ApprovalRequest) -> bool:
        if self.digest is None or self.digest != arguments_digest(request.tool.name, request.args):
            raise ApprovalRequired(
                f"The approval sent with this call of {request.tool.name} was not asked for this call "
                "(or has expired), so it did not run. Call it again to be asked."
            )
        if self.action == "accept":
            return True
        raise refusal(request.tool.name, self.action if isinstance(self.action, str) else None)
