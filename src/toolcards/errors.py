"""The toolcards exception tree.

Every error toolcards raises is a :class:`ToolcardsError`. The branches follow who
acts on the error::

    ToolcardsError
    ├── RetriableError          the model can fix its call (the message says how)
    │   ├── GuardError          a policy guard denied the call
    │   └── ToolTimeout         the call ran past its time limit
    ├── ToolFailed              terminal: the model sees it and adapts, retrying will not help
    │   ├── ApprovalRequired    the tool needs a human's approval and did not get it
    │   ├── CallCancelled       the caller cancelled the call; its work was stopped
    │   ├── ActorUnavailable    the actor behind a tool is stopped or did not answer
    │   ├── BudgetExceeded      a usage budget (member, task or card) is spent
    │   └── StoreError          persistence failed; nothing was written
    │       └── OutcomeUnknown  a commit's answer was lost: it may or may not be written
    ├── MemberStopped           an orchestrator stopped the member's run (for the application)
    ├── ObserverGone            a card's observer (its agent) no longer exists
    ├── WiringError             a developer mistake found when cards are bound
    └── CommandNotRecognized    a slash command that no card provides

Adapters translate at the boundary: ``RetriableError`` becomes pydantic-ai's
``ModelRetry`` or an MCP result with ``isError``; ``ToolFailed`` becomes a failed tool
result. This module imports nothing from the package, so every layer can use it.
"""

from __future__ import annotations

__all__ = [
    "ActorUnavailable",
    "ApprovalRequired",
    "BudgetExceeded",
    "CallCancelled",
    "CommandNotRecognized",
    "GuardError",
    "MemberStopped",
    "ObserverGone",
    "OutcomeUnknown",
    "RetriableError",
    "StoreError",
    "ToolFailed",
    "ToolTimeout",
    "ToolcardsError",
    "WiringError",
]


class ToolcardsError(Exception):
    """Base class of every error raised by toolcards."""


class RetriableError(ToolcardsError):
    """The model can fix its call: the message says what to do next.

    Raise it from a tool for a missing file, an unknown id, a bad pattern. For a failure
    that retrying cannot fix, raise :class:`ToolFailed`.
    """


class GuardError(RetriableError):
    """A guard denied the call; the message says which policy and how to comply."""


class ToolTimeout(RetriableError):
    """The call ran past its time limit; the message gives the limit and what to try."""


class ToolFailed(ToolcardsError):
    """A terminal tool failure: the model is told, but retrying the same call will not help.

    For an error the model can fix by changing its arguments, raise :class:`RetriableError`.
    """


class CallCancelled(ToolFailed):
    """The caller cancelled the call (:mod:`toolcards.core._cancel`), so its work was stopped.

    Nobody waits for its answer any more; adapters send none. What the call had not done yet
    when it was cancelled was not done.
    """


class ActorUnavailable(ToolFailed):
    """The actor that owns a tool's state is stopped or did not answer in time."""


class BudgetExceeded(ToolFailed):
    """A usage budget of a member, a task or a card is spent: the call was refused before it
    ran. The message names the budget, what was used, and who can raise it.

    Added in 0.3.
    """


class MemberStopped(ToolcardsError):
    """An orchestrator stopped this member's run (``stop_member``); raised out of the run.

    The pydantic-ai toolset raises it before the model request that would have followed, so
    ``await agent.run(...)`` ends with it; a team runtime's member ends its run and waits for
    its next message. Not a tool failure: nothing is wrong with any call.

    Attributes:
        member: the stopped member's handle (``"@Builder-1"``).
        by: who asked for the stop (a handle, or a label such as ``"user"``).
        reason: what they gave as the reason.
    """

    def __init__(self, member: str, by: str, reason: str) -> None:
        super().__init__(f"{member}'s run was stopped by {by}: {reason}")
        self.member = member
        self.by = by
        self.reason = reason


class ObserverGone(ToolcardsError):
    """A card was used after the agent (observer) it was bound to was garbage-collected."""


class WiringError(ToolcardsError):
    """A usage mistake by the application developer, found when cards are bound.

    The message names the card, the field and the fix, and lists every problem found.
    """


class CommandNotRecognized(ToolcardsError):
    """A slash command that no bound card provides; the message lists the known commands."""


class StoreError(ToolFailed):
    """A persistence transaction failed; nothing of it was written (but see :class:`OutcomeUnknown`).

    Attributes:
        transient: ``True`` when the store was unreachable for the moment (a lost
            connection, a server restarting, a lock held too long): the store reconnects by
            itself and the same call is likely to succeed in a few seconds. ``False`` when
            someone must act (a damaged file, a full disk, a wrong password).
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class OutcomeUnknown(StoreError):
    """The connection was lost while a commit was answered, and the store could not learn
    afterwards whether it was committed.

    The write may be in the store or not. Read the state it changes before doing it again,
    or send it again with the same idempotency key, which applies it at most once
    (:mod:`toolcards.core._idempotency`).

    Attributes:
        check: what a model can call to see whether the write is there (set by the actor
            that knows its state), or ``None``.
    """

    def __init__(self, message: str, *, check: str | None = None) -> None:
        super().__init__(message, transient=True)
        self.check = check


class ApprovalRequired(ToolFailed):
    """A tool that requires a human's approval was called without it, so it did not run.

    The message says so and what the model can do instead; retrying the same call will not
    help until someone approves it. A ``ToolFailed``: for an error the model can fix by
    changing its arguments, see :class:`RetriableError`.

    Attributes:
        deferrable: ``True`` when nobody was asked (the tool has no approver), so an
            adapter able to ask a human later (pydantic-ai's deferred tools) may do so;
            ``False`` when an approver refused the call.
    """

    def __init__(self, message: str, *, deferrable: bool = False) -> None:
        super().__init__(message)
        self.deferrable = deferrable
