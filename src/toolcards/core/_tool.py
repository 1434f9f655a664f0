"""``Tool``: one capability, and the one pipeline every call goes through.

Whatever the channel (a pydantic-ai tool call, an MCP ``tools/call``, an orchestrator
command), a call runs the same steps, so the same input gives the same answer everywhere:

0. the ledger's admission, for a tool bound to a team that keeps a ledger: a call whose
   member, task or card has spent its budget is refused (``BudgetExceeded``) before
   anything else runs (:mod:`toolcards.core._ledger`);
1. decode the arguments and refuse them past ``max_argument_chars``
   (:mod:`toolcards.core._arguments`), then validate and coerce them
   (:mod:`toolcards.core._schema`), a string that is not text (a lone surrogate) refused
   first (:mod:`toolcards.core._surrogates`);
2. guards, in order: allow, rewrite the arguments, or deny (``GuardError``);
3. approval, for a tool that ``requires_approval``: the caller approved the call
   (``approved=True``) or the tool's ``approver`` (else the caller's current one,
   :func:`~toolcards.core._approval.approving`) does; otherwise ``ApprovalRequired``
   (:mod:`toolcards.core._approval`). The time a human takes counts against no limit;
4. the per-tool concurrency limit, if any;
5. the timeout, if any (``ToolTimeout``), also set as the handler's deadline
   (:mod:`toolcards.core._deadline`) so long loops stop once the caller gave up;
6. the handler, sync or async. On async channels a sync handler runs in a worker thread,
   because handlers may block on actor asks and must never block the event loop;
7. the output budget: a longer result is kept whole by the team's spill sink and answered
   with its head, its tail and where to read the rest (:mod:`toolcards.core._spill`), or,
   where no sink can take it, cut with a notice;
8. the untrusted-output envelope, for tools that return outside data (around the data, the
   budget's notice after it);
9. a :class:`~toolcards.core._events.ToolExecutionRecord`, sent to the record sink (a
   refused call is recorded as a failure, like a guard's denial), and the call's note in
   the team's ledger: its arguments, the answer the model reads (or the error's message),
   its time (a call refused by a budget is not noted: it did not run).

Cancellation (:mod:`toolcards.core._cancel`): :meth:`Tool.call` gives each call a cancel
token, current in the handler's thread, and cancels it when the task awaiting the call is
cancelled. The pipeline checks it after approval and after waiting for a concurrency slot
(a call cancelled meanwhile never runs its handler), loops that check their deadline check it
too, and whoever registered for it stops its own work (the sandbox kills the command). The
call then raises ``CallCancelled``.

The whole call is an OpenTelemetry span when the application traces
(:mod:`toolcards.core._tracing`); when it does not, that costs one dictionary lookup.

Errors: ``RetriableError`` (and its subclasses) and ``ToolFailed`` (``ApprovalRequired``
included) pass through for the adapter to translate. An actor's errors a handler let escape
(a stopped actor, no answer in time) become ``ActorUnavailable`` (:mod:`toolcards.actors._asking`).
Any other exception from a handler is logged with its traceback and raised as
``ToolFailed`` naming the exception type and message. ``ObserverGone`` and
``WiringError`` are programming errors and propagate unchanged.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import functools
import inspect
import itertools
import logging
import re
import sys
import threading
import time
import types
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from toolcards.core._approval import ApprovalRequest, Approver, current_approver, declined, not_approved
from toolcards.core._arguments import DEFAULT_MAX_ARGUMENT_CHARS, decode_arguments
from toolcards.core._cancel import CancelToken, cancelling, check_cancelled, current_cancel
from toolcards.core._channels import Channels
from toolcards.core._deadline import deadline_after
from toolcards.core._events import ToolExecutionRecord
from toolcards.core._guards import Guard, GuardContext
from toolcards.core._hints import NO_HINTS, ToolHints
from toolcards.core._idempotency import call_key, calling
from toolcards.core._output import DEFAULT_OUTPUT_BUDGET, over_budget, wrap_untrusted
from toolcards.core._records import Records
from toolcards.core._schema import ArgsSchema, build_args_schema
from toolcards.core._spill import SpillSink, budgeted_answer, head_and_tail
from toolcards.core._tracing import ToolSpan, start_tool_span, tracing
from toolcards.errors import (
    BudgetExceeded,
    GuardError,
    ObserverGone,
    OutcomeUnknown,
    RetriableError,
    StoreError,
    ToolcardsError,
    ToolFailed,
    ToolTimeout,
    WiringError,
)

if TYPE_CHECKING:
    import concurrent.futures

    from toolcards.core._ledger import CallLedger

__all__ = ["RecordSink", "Tool"]

logger = logging.getLogger("toolcards.tool")

RecordSink = Callable[[ToolExecutionRecord], None]
"""Receives one record per call (success or failure)."""

_call_ids = itertools.count(1)
_UNBUDGETED = frozenset({int, float, bool, type(None)})
"""Result types the output budget passes unchanged: no need to ask it."""
_SLOT_POLL_S = 0.05
"""How often a call waiting for a concurrency slot looks whether it was cancelled."""
_timeout_pool: concurrent.futures.ThreadPoolExecutor | None = None
_timeout_pool_lock = threading.Lock()


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    # asyncio and concurrent.futures load on first use: `import toolcards` stays light.
    import concurrent.futures

    global _timeout_pool
    with _timeout_pool_lock:
        if _timeout_pool is None:
            _timeout_pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="toolcards-timeout")
        return _timeout_pool


def _run_until(timeout_s: float, handler: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Run ``handler`` in a pool thread with the call's deadline set, so abandoned work stops."""
    with deadline_after(timeout_s):
        return handler(**kwargs)


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A capability ready to be called through any channel.

    Build one with :meth:`from_function`; derive variants with :meth:`replace`.
    """

    name: str
    """The name models and commands use, e.g. ``workspace_read``."""
    description: str
    """What the model reads: the docstring description plus the param's instructions."""
    handler: Callable[..., Any]
    """The function that does the work (sync or async), called with validated arguments."""
    args: ArgsSchema
    """Validator and JSON schema derived from the handler's signature."""
    channels: frozenset[Channels] = frozenset({Channels.TOOL_CALL})
    """The channels this tool is exposed on."""
    param: Any = None
    """The ``BaseToolParam`` this tool was made from (its type keys the command channel)."""
    card: str = ""
    """A label of the card that produced the tool, for error messages."""
    agent: str | None = None
    """The name of the agent the tool is bound to, stamped on records."""
    guards: tuple[Guard, ...] = ()
    """Policy checks run before the handler, in order."""
    requires_approval: bool = False
    """A call runs only once approved: by its caller (``approved=True``) or the ``approver``."""
    approver: Approver | None = None
    """Asked to approve each call of a tool that ``requires_approval`` (``ToolFactory(approve=...)``)."""
    timeout_s: float | None = None
    """Stop waiting for the handler after this many seconds."""
    max_concurrency: int | None = None
    """At most this many calls run at once."""
    output_budget: int = DEFAULT_OUTPUT_BUDGET
    """Characters of output a model reads at most: a longer result is spilled (kept whole
    elsewhere, its head and tail shown) or, without a sink, cut with a notice."""
    max_argument_chars: int = DEFAULT_MAX_ARGUMENT_CHARS
    """Larger arguments (as JSON text) are refused before validation, with a ``RetriableError``."""
    untrusted_output: bool = False
    """The result carries outside data and is wrapped in the untrusted-output envelope."""
    mutates: bool = False
    """The tool changes state (read-only filters drop it)."""
    record_sink: RecordSink | None = None
    """Receives a record of every call. A sink that is false (``bool(sink)``) wants none for
    now, and none is built: the factory's is false while nobody listens."""
    spill: Callable[[Channels], SpillSink | None] | None = None
    """Where a result over :attr:`output_budget` is kept whole, for a call on a channel: the
    factory's :class:`~toolcards.core._spill.TeamSpill`. ``None`` (or no sink for the call): the
    result is cut with a notice. Added in 0.3."""
    unreachable: frozenset[str] = frozenset()
    """Tool names the model cannot call: no error this tool returns to a model names one
    (:mod:`toolcards.core._mentions`)."""
    hints: ToolHints = NO_HINTS
    """What clients may know about the tool before calling it; the pipeline never reads them."""
    ledger: CallLedger | None = None
    """The team's ledger: admits each call against the budgets and notes what it cost
    (:mod:`toolcards.core._ledger`). Set by the factory for tools bound to a team that keeps
    one. Added in 0.3."""
    _semaphore: threading.BoundedSemaphore | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        semaphore = threading.BoundedSemaphore(self.max_concurrency) if self.max_concurrency else None
        object.__setattr__(self, "_semaphore", semaphore)

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        instructions: str | None = None,
        description: str | None = None,
        **options: Any,
    ) -> Tool:
        """Make a tool from a function or bound method; its signature is the schema.

        Args:
            func: The handler. Its docstring summary becomes the description and its
                ``Args:`` section the parameter descriptions.
            name: The tool name (default: the function's name).
            instructions: Appended to the description (a param's ``instructions``).
            description: Replaces the docstring description.
            options: Any other :class:`Tool` field.
        """
        tool_name = name or func.__name__
        schema = build_args_schema(func, name=tool_name)
        text = description if description is not None else schema.description
        if instructions:
            text = f"{text}\n\n{instructions}" if text else instructions
        return cls(name=tool_name, description=text, handler=func, args=schema, **options)

    def replace(self, **changes: Any) -> Tool:
        """A copy with ``changes`` applied (the semaphore is rebuilt for the copy).

        Raises:
            TypeError: a change names no field of :class:`Tool`.
        """
        unknown = changes.keys() - _FIELDS
        if unknown:
            raise TypeError(f"Tool has no field {', '.join(sorted(unknown))}")
        # What dataclasses.replace does (every field again through __init__), without its
        # per-field loop in Python: a factory derives each of its tools once per bind.
        copy = object.__new__(Tool)
        copy.__dict__.update(self.__dict__, **changes)
        semaphore = threading.BoundedSemaphore(copy.max_concurrency) if copy.max_concurrency else None
        copy.__dict__["_semaphore"] = semaphore
        if "handler" in changes:
            copy.__dict__.pop("_is_async", None)  # found again for the new handler
        return copy

    @property
    def parameters_schema(self) -> dict[str, Any]:
        """The compact JSON schema of the arguments."""
        return self.args.json_schema

    @property
    def is_async(self) -> bool:
        """Whether the handler is a coroutine function."""
        return self._is_async

    @functools.cached_property
    def _is_async(self) -> bool:
        # At the first call, not at bind: a factory makes every tool of its cards at once.
        return inspect.iscoroutinefunction(self.handler)

    # -- the pipeline -------------------------------------------------------------------

    def call_sync(
        self,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        channel: Channels = Channels.COMMAND,
        call_id: str | None = None,
        approved: bool = False,
        idempotency_key: str | None = None,
        idempotency_scope: str | None = None,
    ) -> Any:
        """Run the pipeline in the calling thread and return the (budgeted) result.

        May block: on the approver, on the handler, on actor asks, and on the concurrency
        limit. An async handler is run to completion on a private event loop (call
        :meth:`call` from async code instead).

        Args:
            arguments: Parameter names to values, or their JSON text.
            channel: The channel the call comes through (stamped on the record).
            call_id: The caller's id of this call (default: a generated one).
            approved: The caller approved this call (a human did, or the caller is trusted
                to run tools that ``requires_approval``); the approver is not asked.
            idempotency_key: The client's key of this call, the same when it sends the call
                again (:mod:`toolcards.core._idempotency`). For a tool that ``mutates``, the
                handler runs as that call (:func:`~toolcards.core._idempotency.current_call`),
                and a store-backed tool answers a repeat with the first answer instead of
                writing again. Ignored by tools that do not mutate.
            idempotency_scope: Whose keys ``idempotency_key`` is unique among (default: the
                tool's agent). A server passes the name its client asked for, so a client
                that joined again under another name (its first connection still open, or
                another process holding the name) finds the call it made before.

        Raises:
            RetriableError: invalid or too large arguments, a guard's denial, a timeout, or
                the handler's own retriable error.
            ApprovalRequired: the tool requires approval and the call was not approved;
                the handler did not run.
            ToolFailed: the handler failed in a way retrying will not fix.

        Changed in 0.2: a tool that ``requires_approval`` runs only once approved
        (``approved``, or its ``approver``), and arguments past ``max_argument_chars`` are
        refused.

        Changed in 0.3: ``idempotency_key`` and ``idempotency_scope``.
        """
        started = time.perf_counter()
        span = None
        if "opentelemetry.trace" in sys.modules and tracing():  # nobody traces without it: skip at once
            call_id = call_id or f"{self.name}-{next(_call_ids)}"
            span = start_tool_span(self, channel.value, call_id)
        ledger = self.ledger if channel is not Channels.SYSTEM_PROMPT else None
        task = None
        try:
            if ledger is not None:
                task = ledger.admit(self)
            kwargs = self._prepare(arguments, channel)
            if self.requires_approval and not approved:
                self._approve(kwargs, channel, call_id)
                check_cancelled()  # cancelled while a human decided: it does not run
            if idempotency_key is not None and self.mutates:
                scope = idempotency_scope or self.agent
                with calling(call_key(scope, self.name, idempotency_key, kwargs)):
                    result = self._run_limited(kwargs)
            else:
                result = self._run_limited(kwargs)
            result = self._finish(result, channel, call_id)
        except BaseException as exc:
            self._fail(exc, channel, call_id, started, span, ledger, task, arguments)
        if ledger is not None:
            ledger.note(self, task, arguments, result, started, False)
        self._succeed(channel, call_id, started, span)
        return result

    async def call(
        self,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        channel: Channels = Channels.TOOL_CALL,
        call_id: str | None = None,
        approved: bool = False,
        idempotency_key: str | None = None,
        idempotency_scope: str | None = None,
    ) -> Any:
        """Run the pipeline without blocking the event loop; same contract as :meth:`call_sync`.

        The approver and a sync handler run in a worker thread. Cancelling the task that
        awaits this call cancels the call's token (:mod:`toolcards.core._cancel`), and with it
        the handler's work; a token current in the caller's context (a server's own) cancels
        it too.

        Changed in 0.3: cancellation reaches the handler.
        """
        import asyncio

        token = CancelToken()
        outer = current_cancel()  # a caller's own token (a server's task) cancels this call too
        forget = outer.on_cancel(token.cancel) if outer is not None else None
        try:
            with cancelling(token):  # asyncio.to_thread and tasks copy it into the handler's context
                if not self._is_async:
                    return await asyncio.to_thread(
                        self.call_sync,
                        arguments,
                        channel=channel,
                        call_id=call_id,
                        approved=approved,
                        idempotency_key=idempotency_key,
                        idempotency_scope=idempotency_scope,
                    )
                return await self._call_async(arguments, channel, call_id, approved, idempotency_key, idempotency_scope)
        except asyncio.CancelledError:
            token.cancel()  # the handler's thread stops where it checks; the sandbox kills its command
            raise
        finally:
            if forget is not None:
                forget()

    async def _call_async(
        self,
        arguments: Mapping[str, Any] | str | None,
        channel: Channels,
        call_id: str | None,
        approved: bool,
        idempotency_key: str | None,
        idempotency_scope: str | None,
    ) -> Any:
        import asyncio

        started = time.perf_counter()
        span = None
        if "opentelemetry.trace" in sys.modules and tracing():
            call_id = call_id or f"{self.name}-{next(_call_ids)}"
            span = start_tool_span(self, channel.value, call_id)
        ledger = self.ledger if channel is not Channels.SYSTEM_PROMPT else None
        task = None
        try:
            if ledger is not None:
                task = ledger.admit(self)
            kwargs = self._prepare(arguments, channel)
            if self.requires_approval and not approved:
                await asyncio.to_thread(self._approve, kwargs, channel, call_id)
                check_cancelled()
            key = (
                call_key(idempotency_scope or self.agent, self.name, idempotency_key, kwargs)
                if idempotency_key and self.mutates
                else None
            )
            with calling(key):
                if self._semaphore is not None:
                    await asyncio.to_thread(self._semaphore.acquire)
                    try:
                        result = await self._run_async(kwargs)
                    finally:
                        self._semaphore.release()
                else:
                    result = await self._run_async(kwargs)
            if self.spill is not None and self._may_spill(result):  # keeping it blocks on a write
                result = await asyncio.to_thread(self._finish, result, channel, call_id)
            else:
                result = self._finish(result, channel, call_id)
        except BaseException as exc:
            self._fail(exc, channel, call_id, started, span, ledger, task, arguments)
        if ledger is not None:
            ledger.note(self, task, arguments, result, started, False)
        self._succeed(channel, call_id, started, span)
        return result

    def _prepare(self, arguments: Mapping[str, Any] | str | None, channel: Channels) -> dict[str, Any]:
        raw = decode_arguments(self.name, arguments, self.max_argument_chars)
        kwargs = self.args.validate(self.name, raw)
        if self.guards:
            kwargs = self._guarded(kwargs, channel)
        return kwargs

    def _guarded(self, kwargs: dict[str, Any], channel: Channels) -> dict[str, Any]:
        """``kwargs`` after every guard, in order; a rewrite is validated again."""
        for guard in self.guards:
            rewritten = guard(GuardContext(tool=self, args=kwargs, channel=channel, agent=self.agent))
            if rewritten is not None:
                kwargs = self.args.validate(self.name, rewritten)
        return kwargs

    def _approve(self, kwargs: dict[str, Any], channel: Channels, call_id: str | None) -> None:
        """Ask the approver about this call; raise ``ApprovalRequired`` unless it approves."""
        approver = self.approver or current_approver()
        if approver is None:
            raise not_approved(self.name)
        # A read-only view: what was approved is what the handler gets.
        view = types.MappingProxyType(kwargs)
        request = ApprovalRequest(tool=self, args=view, channel=channel, agent=self.agent, call_id=call_id)
        if approver(request) is not True:
            raise declined(self.name)

    def _run_limited(self, kwargs: dict[str, Any]) -> Any:
        """The handler's result, within the tool's concurrency limit; never started once the
        call is cancelled."""
        token = current_cancel()
        if self._semaphore is not None:
            if token is None:
                with self._semaphore:
                    return self._run_sync(kwargs)
            while not self._semaphore.acquire(timeout=_SLOT_POLL_S):
                token.check()  # cancelled while waiting for a slot
            try:
                token.check()
                return self._run_sync(kwargs)
            finally:
                self._semaphore.release()
        if token is not None:
            token.check()
        return self._run_sync(kwargs)

    def _run_sync(self, kwargs: dict[str, Any]) -> Any:
        if self._is_async:
            import asyncio

            return asyncio.run(self._run_async(kwargs))
        timeout_s = self.timeout_s
        if timeout_s is None:
            return self.handler(**kwargs)
        import concurrent.futures

        # In the caller's context: the current span (and anything else kept in one) goes along.
        future = _pool().submit(contextvars.copy_context().run, _run_until, timeout_s, self.handler, kwargs)
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise self._timeout() from None

    async def _run_async(self, kwargs: dict[str, Any]) -> Any:
        import asyncio

        if self.timeout_s is None:
            return await self.handler(**kwargs)
        with deadline_after(self.timeout_s):
            # The task created by wait_for copies this context, deadline included.
            awaitable: Awaitable[Any] = self.handler(**kwargs)
            try:
                return await asyncio.wait_for(awaitable, self.timeout_s)
            except TimeoutError:
                raise self._timeout() from None

    def _timeout(self) -> ToolTimeout:
        return ToolTimeout(
            f"{self.name} did not finish within {self.timeout_s:g} s and was abandoned. "
            "Retry with a smaller request, or split the work into several calls."
        )

    def _finish(self, result: Any, channel: Channels, call_id: str | None) -> Any:
        """Steps 7 and 8: the output budget (spill or cut), then the untrusted envelope."""
        kind = type(result)
        if kind is Records:  # text with its records: the text is budgeted, the records kept...
            text = self._finish(str(result), channel, call_id)
            # ...unless the tool returns outside data: the envelope protects only the text.
            return text if self.untrusted_output else result.with_text(text)
        if kind is str:
            if len(result) > self.output_budget:
                return budgeted_answer(self, result, channel, call_id)
        elif kind not in _UNBUDGETED:
            text = over_budget(result, self.output_budget)
            if text is not None:
                structured = result if isinstance(result, dict | list) else None
                return budgeted_answer(self, text, channel, call_id, value=structured)
        if self.untrusted_output and isinstance(result, str):
            result = wrap_untrusted(result, self.name)
        return result

    def _may_spill(self, result: Any) -> bool:
        """Whether ``result`` may be over the budget (a dict or list is measured by the budget)."""
        kind = type(result)
        return (kind in (str, Records) and len(result) > self.output_budget) or kind is dict or kind is list

    def _fail(
        self,
        exc: BaseException,
        channel: Channels,
        call_id: str | None,
        started: float,
        span: ToolSpan | None,
        ledger: CallLedger | None = None,
        task: int | None = None,
        arguments: Any = None,
    ) -> NoReturn:
        """Record the failure (and note it in the ``ledger``, unless a budget refused the
        call) and raise it, translated (see :func:`_translate`)."""
        error = _translate(self.name, exc)
        if channel is Channels.TOOL_CALL and self.unreachable and isinstance(error, RetriableError | ToolFailed):
            error = _without_dangling_names(error, self.unreachable - {self.name})
        if isinstance(error, ToolcardsError) and len(error.args) == 1 and len(str(error)) > self.output_budget:
            error = _clipped(error, self.output_budget)
        if self.record_sink and isinstance(error, ToolcardsError):
            self._record(channel, call_id, started, f"{type(error).__name__}: {error}")
        if ledger is not None and isinstance(error, ToolcardsError) and not isinstance(error, BudgetExceeded):
            ledger.note(self, task, arguments, str(error), started, True)
        if span is not None:
            span.finish(error)
        if error is exc:
            raise exc
        raise error from exc

    def _succeed(self, channel: Channels, call_id: str | None, started: float, span: ToolSpan | None) -> None:
        if self.record_sink:
            self._record(channel, call_id, started, None)
        if span is not None:
            span.finish(None)

    def _record(self, channel: Channels, call_id: str | None, started: float, error: str | None) -> None:
        assert self.record_sink is not None
        record = ToolExecutionRecord(
            tool=self.name,
            call_id=call_id or f"{self.name}-{next(_call_ids)}",
            agent=self.agent,
            channel=channel._value_,  # .value is two Python-level calls (enum's descriptor)
            success=error is None,
            error=error,
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )
        try:
            self.record_sink(record)
        except Exception:
            # A broken subscriber must not turn a finished call into a failure.
            logger.exception("record sink failed for %s", self.name)


_FIELDS = frozenset(field.name for field in dataclasses.fields(Tool))


def _translate(tool_name: str, exc: BaseException) -> BaseException:
    if isinstance(exc, StoreError) and not getattr(exc, "for_model", False):
        return _store_failure(tool_name, exc)
    if isinstance(exc, (RetriableError, ToolFailed, ObserverGone, WiringError, GuardError)):
        return exc
    if not isinstance(exc, Exception):  # KeyboardInterrupt, CancelledError, SystemExit
        return exc
    unreachable = _actor_error(tool_name, exc)
    if unreachable is not None:
        return unreachable
    from toolcards.core._unexpected import log_unexpected  # the rare road: loaded when a tool has a bug

    log_unexpected(logger, f"tool {tool_name}", exc)  # never its message: it may quote file text
    return ToolFailed(f"{tool_name} failed: {type(exc).__name__}: {exc}")


def _actor_error(tool_name: str, exc: Exception) -> ToolFailed | None:
    # Only an actor system that is loaded can have raised its errors; asking.py knows them.
    if "pykka" not in sys.modules:
        return None
    from toolcards.actors._asking import actor_error

    error = actor_error(exc, actor=f"The actor that owns {tool_name}'s state")
    if error is not None:
        error.args = (f"{error} Tell the user instead of retrying.",)
    return error


_HOST_PATH = re.compile(r"(?<![\w.])/(?:[^\s/:'\"()]+/)*([^\s/:'\"()]+)")


def _store_failure(tool_name: str, exc: StoreError) -> StoreError:
    """A short :class:`StoreError` for the model, saying what it may do next; the full one
    (file or server, cause, fix) goes to the log.

    Three cases, told apart because each calls for something else: an outcome the store
    could not learn (:class:`OutcomeUnknown`: check before doing it again), a transient
    outage (nothing was changed, retry shortly: the store reconnects by itself), and any
    other failure (nothing was changed, someone must look). The original stays reachable as
    ``__cause__`` for code that wants the detail.
    """
    first = str(exc).split(". ", 1)[0].rstrip(".")
    cause = _HOST_PATH.sub(r"\1", first)
    failure: StoreError
    if isinstance(exc, OutcomeUnknown):
        logger.warning("tool %s: %s", tool_name, exc)
        check = f"{exc.check} shows whether it was" if exc.check else "read what it changes to see whether it was"
        failure = OutcomeUnknown(
            f"{tool_name} may or may not have been applied: the team's store lost its connection while "
            f"committing it and could not tell afterwards. Before doing it again, check: {check}; "
            "redo only what is missing.",
            check=exc.check,
        )
    elif exc.transient:
        logger.warning("tool %s: %s", tool_name, exc)
        failure = StoreError(
            f"{tool_name} could not reach the team's shared state for the moment ({cause}), so nothing was "
            "changed. The store reconnects by itself: retry in a few seconds; if it keeps failing, tell the user.",
            transient=True,
        )
    else:
        logger.error("tool %s: %s", tool_name, exc)
        failure = StoreError(
            f"{tool_name} could not use the team's shared state, so nothing was changed ({cause}). "
            "Tell the user: the server's log says what is wrong with the store."
        )
    failure.for_model = True  # type: ignore[attr-defined]
    failure.__cause__ = exc
    return failure


def _clipped(error: ToolcardsError, budget: int) -> ToolcardsError:
    """``error`` with its message cut to about ``budget`` characters: its head and its tail
    (where a refusal says what to do), as a result over the budget is. A refusal listing
    every one of 10,000 names must not cost the model more than any answer may."""
    text = str(error)
    head_end, tail_start = head_and_tail(text, budget)
    clipped = copy.copy(error)
    clipped.args = (
        f"{text[:head_end]}\n[… {tail_start - head_end:,} characters of this message cut …]\n{text[tail_start:]}",
    )
    return clipped


def _without_dangling_names(error: ToolcardsError, unreachable: frozenset[str]) -> ToolcardsError:
    """``error`` with the sentences naming a tool the model cannot call taken out."""
    from toolcards.core._mentions import without_unreachable

    text = str(error)
    kept = without_unreachable(text, unreachable)
    if kept == text or not kept:
        return error
    trimmed = copy.copy(error)
    trimmed.args = (kept,)
    return trimmed
