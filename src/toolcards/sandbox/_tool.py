"""``ExecTool``: shell commands in the team workspace, run by the team's sandbox.

``exec_command`` is a TOOL_CALL and a COMMAND. One sandbox actor per team (``#SandboxActor``,
or ``#SandboxActor:<workspace id>`` for a mounted directory such as an MCP client's root)
serves every agent; commands run in worker threads, so one agent's long build does not hold up
another's ``ls``. Every call carries its card's :class:`CommandPolicy` (allowlist, limits,
quota, deadline, backend options), so cards with different settings share one sandbox; what
cannot differ inside a team (mode, workspace, concurrency, a container's settings) is checked
at bind time and a disagreement is a ``WiringError`` naming both cards, never a silent merge.

A command that ran returns its exit code, stdout and stderr (capped, saying what was cut) as
untrusted output. One that did not run or was stopped is an error, so adapters report it as
one: a refusal or the disk quota is ``RetriableError``, the deadline ``ToolTimeout`` (exit code
124), the sandbox failing ``ToolFailed``; its output is still included. A cancelled call kills
the process group (:mod:`toolcards.core._cancel`); a running one reports progress
(:mod:`toolcards.core._progress`). A call with an idempotency key runs its command at most
once: a retry gets the first answer (:mod:`toolcards.sandbox._command_calls`). Background
runs, ``network`` and the sandbox modes are described in ``docs/cards/sandbox.md``
(:mod:`toolcards.sandbox._runs`).

The workspace is the tree ``WorkspaceTool`` edits, whose gate compares file hashes, so files a
command changed are seen by every agent's next write. When the tree keeps a journal, each
command runs inside the team's :data:`~toolcards.core._services.WORKSPACE_COMMANDS` service,
which scans the tree around it and journals its changes as this member's ``exec_command``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, ClassVar, cast

from pydantic import Field, PrivateAttr, field_validator

from toolcards.core._bounds import unlisted_bound, unlisted_range
from toolcards.core._cancel import CANCELLED_MESSAGE, current_cancel
from toolcards.core._card import Capability, ToolCard, capability
from toolcards.core._channels import COMMAND, SYSTEM_PROMPT, TOOL_CALL, Channels
from toolcards.core._hints import ToolHints
from toolcards.core._idempotency import current_call
from toolcards.core._observer import ActorToolObserver
from toolcards.core._output import wrap_untrusted
from toolcards.core._params import BaseToolParam
from toolcards.core._progress import current_progress
from toolcards.core._services import WORKSPACE_COMMANDS
from toolcards.errors import CallCancelled, RetriableError, ToolFailed, ToolTimeout, WiringError
from toolcards.fs._locations import WorkspaceId, is_mounted, workspace_dir
from toolcards.sandbox._actor import CANCEL_STOP, QUOTA_STOP, SandboxActor, SandboxProxy, sandbox_actor_class
from toolcards.sandbox._command_calls import UNKEYED, Claim, CommandCalls, EarlierCall
from toolcards.sandbox._guards import MAX_COMMAND_CHARS
from toolcards.sandbox._hosts import HostAllowlist
from toolcards.sandbox._models import DEFAULT_ALLOWED_COMMANDS, CommandPolicy, ExecLimits, ExecResult
from toolcards.sandbox._run_numbers import StoredRunNumbers
from toolcards.sandbox._runs import BackgroundRun
from toolcards.store._default import default_store

__all__ = ["ExecCommandParam", "ExecOutputParam", "ExecRunsParam", "ExecStatusParam", "ExecStopParam", "ExecTool"]

ACTOR_NAME = "#SandboxActor"


class ExecCommandParam(BaseToolParam):
    """``exec_command``: run one shell command in the workspace."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ExecStatusParam(BaseToolParam):
    """``exec_status``: how a background run is doing."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ExecOutputParam(BaseToolParam):
    """``exec_output``: a page of a background run's output."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ExecStopParam(BaseToolParam):
    """``exec_stop``: kill a background run and every process it started."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ExecRunsParam(BaseToolParam):
    """``exec_runs``: the member's background runs, in its context while any runs or ended unread."""

    expose: set[Channels] = {SYSTEM_PROMPT}


_RUN_TOOLS = ("exec_status", "exec_output", "exec_stop")
_RUN_FIELDS = frozenset({*_RUN_TOOLS, "exec_runs"})

STOP_WAIT_S = 10.0
"""How long ``exec_stop`` waits for a killed run to be reaped before it answers anyway."""

REPLAYED = "This call was already applied; the command was not run again."
"""The first line of a keyed call's answer replayed to a retry (:mod:`toolcards.sandbox._command_calls`)."""


class ExecTool(ToolCard):
    """Shell commands in the team workspace, contained by a sandbox backend.

    ``mode``: ``auto`` (probe bwrap → seatbelt → docker → local, warning once if it falls
    back to local), ``local``, ``bwrap``, ``docker``, ``seatbelt``, or any mode registered
    in ``toolcards.sandbox.SANDBOX_ACTOR_CLASSES``. ``options`` are the backend's own
    settings (e.g. ``{"allow_network": true}`` for bwrap, ``{"image": ...}`` for docker).
    ``timeout_s``, ``limits``, ``allowed_commands`` and ``options`` apply to this card's
    commands only, even when other agents of the team use other values.

    Raises ``WiringError`` at bind when the team's sandbox runs in another mode, on another
    workspace, or with other shared settings (``SandboxActor.conflicts``).
    """

    kind: ClassVar[str] = "exec"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    mode: str = "auto"
    """The sandbox backend: ``auto``, ``bwrap``, ``docker``, ``seatbelt``, ``local``, or a mode
    registered in ``SANDBOX_ACTOR_CLASSES``. Every card of a team must name the same one."""
    workspace_id: WorkspaceId | None = None
    """The tree commands run in (default: the team id), the one ``WorkspaceTool`` edits."""
    timeout_s: float = Field(default=30.0, gt=0, le=3600)
    """Seconds a command may run before it and its process group are killed (exit code 124)."""
    limits: ExecLimits = Field(default_factory=ExecLimits)
    """Resource limits of each command of this card."""
    allowed_commands: list[str] = Field(default_factory=lambda: list(DEFAULT_ALLOWED_COMMANDS))
    """First words a command may start with (a usability filter; the backend is the security)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """The backend's own settings, validated into its options model (``LocalOptions``,
    ``BwrapOptions``, ``DockerOptions``, ``SeatbeltOptions``) when the card binds."""
    network: bool | list[str] | None = None
    """Where commands may connect. ``False``: nowhere; ``True``: anywhere the host can; a list
    of hosts (``["example.com", "*.example.org"]``, see :mod:`toolcards.sandbox._hosts`): those
    only, through a proxy that refuses and reports the rest (mode ``bwrap``); ``None`` (the
    default): as ``options`` say, which is no network for the isolating backends."""
    background_timeout_s: float = Field(default=600.0, gt=0, le=86_400)
    """Seconds a background run may last before it and its process group are killed."""
    max_background_runs: int = Field(default=4, ge=0, le=64)
    """Background runs one member may have going at once. 0 offers none: no ``background``
    argument, no ``exec_status``/``exec_output``/``exec_stop``, and no tokens spent on their
    definitions."""
    background_output_chars: int = Field(default=1_000_000, ge=1_000, le=50_000_000)
    """Characters of a background run's output kept for ``exec_output`` (the last ones)."""
    exec_command: ExecCommandParam | bool = True
    exec_status: ExecStatusParam | bool = True
    exec_output: ExecOutputParam | bool = True
    exec_stop: ExecStopParam | bool = True
    exec_runs: ExecRunsParam | bool = True
    _sandbox: SandboxProxy | None = PrivateAttr(default=None)
    _policy: CommandPolicy | None = PrivateAttr(default=None)
    _actor_name: str = PrivateAttr(default=ACTOR_NAME)
    _workspace: Path | None = PrivateAttr(default=None)
    _team: Any = PrivateAttr(default=None)
    _member: str = PrivateAttr(default="")
    _calls: CommandCalls | None = PrivateAttr(default=None)

    def on_bind(self, observer: Any) -> None:
        agent: ActorToolObserver = observer
        actor_class: type[SandboxActor] = sandbox_actor_class(self.mode)
        workspace = workspace_dir(self.workspace_id or agent.team_id)
        # A directory mounted as a workspace (an MCP client's root) gets a sandbox of its own:
        # the team's runs in the team's tree.
        mounted = self.workspace_id is not None and is_mounted(self.workspace_id)
        self._actor_name = f"{ACTOR_NAME}:{self.workspace_id}" if mounted else ACTOR_NAME
        options = {
            **self.options,
            **self._network_options(actor_class),
            "allowed_commands": tuple(self.allowed_commands),
        }
        policy = actor_class.policy_for(self.limits, self.timeout_s, options)
        label = f"ExecTool of {agent.address.handle}"
        store = default_store()
        try:
            sandbox = agent.team.get_or_spawn(
                self._actor_name,
                actor_class,
                workspace,
                policy.limits,
                policy.timeout_s,
                policy.options,
                owner=label,
                run_numbers=StoredRunNumbers(store, agent.team_id),
                proxy=SandboxProxy,
            )
        except TypeError:
            # The team's sandbox is of another class (another mode): report it below.
            ref = agent.team.tool_actors().get(self._actor_name)
            if ref is None or not ref.is_alive() or issubclass(ref.actor_class, actor_class):
                raise
            sandbox = cast(SandboxProxy, ref.proxy())
        differences = self.ask(sandbox.conflicts(actor_class.mode, workspace, policy), actor=self._actor_name)
        if differences:
            owner: str = self.ask(sandbox.owner, actor=self._actor_name)
            raise WiringError(
                f"{label} cannot share team {agent.team_id}'s sandbox with {owner}: "
                + "; ".join(f"{difference} ({label} vs {owner})" for difference in differences)
                + ". A team has one sandbox: give these settings the same value in both cards "
                "(allowed_commands, limits other than a docker container's, timeout_s and other "
                "options may differ)."
            )
        self._sandbox = sandbox
        self._policy = policy
        self._workspace = workspace
        self._team = agent.team
        self._member = agent.address.handle
        self._calls = CommandCalls(store, agent.team_id)

    @field_validator("network")
    @classmethod
    def _hosts_parse(cls, network: bool | list[str] | None) -> bool | list[str] | None:
        if isinstance(network, list):
            HostAllowlist(network)  # raises ValueError naming every bad entry
        return network

    def _network_options(self, actor_class: type[SandboxActor]) -> dict[str, Any]:
        """The backend options that carry :attr:`network` (empty when it is ``None``).

        Raises:
            WiringError: the backend cannot do what ``network`` asks, or ``options`` says otherwise.
        """
        if self.network is None:
            return {}
        fields = actor_class.options_class.model_fields
        mode = actor_class.mode
        if isinstance(self.network, list):
            if "allowed_hosts" not in fields:
                raise WiringError(
                    f"ExecTool(network={self.network!r}): a host allowlist needs mode 'bwrap'; mode {mode!r} "
                    "cannot hold a command to some hosts. Use mode='bwrap', or network=True or False."
                )
            wanted: dict[str, Any] = {"allowed_hosts": tuple(self.network), "allow_network": False}
        elif "allow_network" in fields:
            wanted = {"allow_network": self.network}
            if "allowed_hosts" in fields:
                wanted["allowed_hosts"] = ()
        elif self.network:
            return {}  # the backend shares the host's network anyway
        else:
            raise WiringError(
                f"ExecTool(network=False): mode {mode!r} cannot cut commands off the network. "
                "Use mode 'bwrap', 'docker' or 'seatbelt', or leave network unset."
            )
        clashes = [
            f"options[{key!r}]" for key, value in wanted.items() if key in self.options and self.options[key] != value
        ]
        if clashes:
            raise WiringError(
                f"ExecTool: network={self.network!r} and {', '.join(clashes)} disagree; set the network in one place."
            )
        return wanted

    def describe(self, field: str) -> str | None:
        """What this card's commands may do: the allowed first words and the network."""
        if field != "exec_command" or self._policy is None:
            return None
        options = self._policy.options
        allowed = options.allowed_commands
        words = f"Allowed commands: {', '.join(allowed)}." if allowed else ""
        hosts = getattr(options, "allowed_hosts", ())
        if hosts:
            words = f"{words} Network: only {', '.join(hosts)}, through the proxy in HTTPS_PROXY.".strip()
        # Only a backend that isolates the network can promise there is none.
        elif hasattr(options, "allow_network") and not options.allow_network:
            words = f"{words} No network.".strip()
        return words or None

    # The result renders within limits.output_chars (head and tail of each stream kept); the
    # pipeline budget only has to leave room for the header lines.
    @capability(
        "exec_command",
        untrusted_output=True,
        output_budget=21_000,
        mutates=True,  # a command may change any file of the workspace
        hints=ToolHints(title="Run command", destructive=True, open_world=True, long_running=True),
    )
    def run(
        self,
        cmd: Annotated[str, Field(max_length=MAX_COMMAND_CHARS, json_schema_extra=unlisted_bound)],
        cwd: str = "",
        timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False, json_schema_extra=unlisted_range)] | None = None,
        background: bool = False,
    ) -> str:
        """Run a shell command in the team workspace; returns exit code, stdout and stderr.

        Args:
            cmd: The command line, e.g. "pytest -q tests".
            cwd: Directory relative to the workspace root.
            timeout_s: Seconds before it is killed (at most the configured limit).
            background: Return a run id at once (servers, long builds).
        """
        if background:
            return self._start_background(cmd, cwd, timeout_s)
        return self.run_in_foreground(cmd, cwd, timeout_s)

    def run_in_foreground(
        self,
        cmd: Annotated[str, Field(max_length=MAX_COMMAND_CHARS, json_schema_extra=unlisted_bound)],
        cwd: str = "",
        timeout_s: float | None = None,
    ) -> str:
        """Run a shell command in the team workspace; returns exit code, stdout and stderr.

        Args:
            cmd: The command line, e.g. "pytest -q tests".
            cwd: Directory relative to the workspace root.
            timeout_s: Seconds before it is killed (at most the configured limit).
        """
        claim = self._claim(self.timeout_s if timeout_s is None else min(timeout_s, self.timeout_s), False)
        if isinstance(claim, EarlierCall):
            return _replayed(claim, self._timeout_text(timeout_s))
        try:
            result = self._execute(cmd, cwd, timeout_s)
        except BaseException:
            claim.leave()  # whether it started is not known: a retry must not run it again
            raise
        if result.error is not None:  # refused, failed or cancelled before it started: nothing ran
            claim.forget()
            return _answer(result, self.limits.output_chars)
        text = result.render(self.limits.output_chars)
        claim.record(text, result.stopped)
        return _ended(text, result.stopped, timed_out=self._timeout_text(timeout_s))

    def _timeout_text(self, timeout_s: float | None) -> str:
        """What a foreground command killed at its deadline tells the model: how long it had
        (``timeout_s`` asked, or the card's limit, saying when the asked one was capped to it)
        and what may help; a longer ``timeout_s`` only while the limit allows one."""
        limit = self.timeout_s
        if timeout_s is not None and timeout_s < limit:
            return (
                f"exec_command: the command did not finish in time ({timeout_s:g} s, its timeout_s) and was killed. "
                "Make it faster, run it in smaller parts, or pass a longer timeout_s (at most "
                f"{limit:g} s, the configured limit)."
            )
        if timeout_s is not None and timeout_s > limit:
            given = f"{limit:g} s: timeout_s={timeout_s:g} was capped to the configured limit"
        else:
            given = f"{limit:g} s, the configured limit"
        if self.max_background_runs > 0 and self.background_timeout_s > limit:
            advice = (
                "Make it faster, run it in smaller parts, or run it with background=true (killed after "
                f"{self.background_timeout_s:g} s)."
            )
        else:
            advice = "Make it faster or run it in smaller parts."
        return f"exec_command: the command did not finish in time ({given}) and was killed. {advice}"

    def _execute(self, cmd: str, cwd: str, timeout_s: float | None) -> ExecResult:
        """Run ``cmd`` in the foreground, inside the journal's block; the sandbox's result."""
        with self._journaled(cmd, timeout_s):
            sandbox = self.bound(self._sandbox)
            running = self.ask(
                sandbox.run(cmd, cwd, timeout_s, self._policy, current_cancel(), current_progress()),
                actor=self._actor_name,
            )
            result: ExecResult = self.ask(running, actor=self._actor_name)
        return result

    def _start_background(self, cmd: str, cwd: str, timeout_s: float | None) -> str:
        # The start is claimed, not the run: a retry gets the run id the first call was given.
        claim = self._claim(0.0, True)
        if isinstance(claim, EarlierCall):
            return _replayed(claim)
        policy = dataclasses.replace(self.bound(self._policy), timeout_s=self.background_timeout_s)
        try:
            started = self._ask_start(cmd, cwd, timeout_s, policy)
        except RetriableError:  # too many runs of this member: nothing started
            claim.forget()
            raise
        except BaseException:
            claim.leave()
            raise
        if isinstance(started, ExecResult):  # refused before it started
            claim.forget()
            return _answer(started, self.limits.output_chars)
        limit = self.background_timeout_s
        if timeout_s is not None and timeout_s > limit:
            deadline = f"{limit:g} s: timeout_s={timeout_s:g} was capped to the configured limit"
        else:
            deadline = f"{limit if timeout_s is None else timeout_s:g} s"
        text = f"Started background run {started.run_id} (killed after {deadline}). {self._run_tools_hint()}"
        claim.record(text, None)
        return text

    def _claim(self, deadline_s: float, background: bool) -> Claim | EarlierCall:
        """This call's claim on its command (:mod:`toolcards.sandbox._command_calls`); without a
        key, :data:`UNKEYED`, which touches no store."""
        call = current_call()
        if call is None:
            return UNKEYED
        return self.bound(self._calls).start(
            call, deadline_s=deadline_s, background=background, check=self._changes_hint()
        )

    def _ask_start(
        self, cmd: str, cwd: str, timeout_s: float | None, policy: CommandPolicy
    ) -> BackgroundRun | ExecResult:
        started: BackgroundRun | ExecResult = self.ask(
            self.bound(self._sandbox).start_run(
                cmd,
                cwd,
                timeout_s,
                policy,
                owner=self._member,
                max_running=self.max_background_runs,
                keep_chars=self.background_output_chars,
                around=self._journaled(cmd, timeout_s, limit_s=self.background_timeout_s),
            ),
            actor=ACTOR_NAME,
        )
        return started

    def _changes_hint(self) -> str:
        """Where the model can see what a command changed (for a retry whose first call left no answer)."""
        journal = self._team is not None and self._team.service(WORKSPACE_COMMANDS) is not None
        if journal:
            return "check what it changed (workspace_history lists the workspace's changes)"
        return "check what it changed in the workspace"

    def capabilities(self) -> Iterator[Capability]:
        """The card's capabilities; without background runs (``max_background_runs`` 0),
        ``exec_command`` has no ``background`` argument and the run tools are left out."""
        offered = self.max_background_runs > 0
        for cap in super().capabilities():
            if cap.field in _RUN_FIELDS and not offered:
                continue
            if cap.field == "exec_command" and not offered:
                yield dataclasses.replace(cap, handler=self.run_in_foreground)
            else:
                yield cap

    def context_tools(self) -> frozenset[str]:
        """The run tools (``exec_status``, ``exec_output``, ``exec_stop``) whenever background
        runs are offered and the model hears of them (``exec_command``'s answer or the runs in
        its context name them), so an agent using tool search can call them.

        Not only while runs are listed: a toolset reads this once, when it is built, and the
        model needs them at the very next request after it starts a run; a tool list that
        does not change with the runs also keeps the provider's prompt cache.
        """
        if self.max_background_runs == 0:
            return frozenset()
        told = TOOL_CALL in getattr(self.param("exec_command"), "expose", ()) or SYSTEM_PROMPT in getattr(
            self.param("exec_runs"), "expose", ()
        )
        return frozenset(self._run_tools()) if told else frozenset()

    def _run_tools(self) -> list[str]:
        """The run tools this card offers the model (the others are not to be named to it)."""
        return [field for field in _RUN_TOOLS if TOOL_CALL in getattr(self.param(field), "expose", ())]

    def _run_tools_hint(self) -> str:
        """What the model can do with a run it started, in words."""
        uses = {
            "exec_status": "check it with exec_status",
            "exec_output": "read its output with exec_output",
            "exec_stop": "stop it with exec_stop",
        }
        offered = [uses[name] for name in self._run_tools()]
        return (", ".join(offered).capitalize() + ".") if offered else ""

    def _run(self, run_id: str) -> BackgroundRun:
        return self.ask(self.bound(self._sandbox).run_of(self._member, run_id), actor=ACTOR_NAME)

    @capability("exec_status", hints=ToolHints(title="Command status"))
    def status(self, run_id: str) -> str:
        """Whether a background run still runs, or how it ended.

        Args:
            run_id: E.g. "r1".
        """
        return self._run(run_id).status(seen=True).describe()

    @capability("exec_output", untrusted_output=True, output_budget=21_000, hints=ToolHints(title="Command output"))
    def output(self, run_id: str, offset: int = 0) -> str:
        """A page of a background run's output (stdout and stderr as printed).

        Args:
            run_id: E.g. "r1".
            offset: Where to start: 0, or the offset the last page gave.
        """
        if offset < 0:
            raise RetriableError(f"offset must be 0 or more, got {offset}.")
        page = self._run(run_id).output(offset, self.limits.output_chars)
        status = page.status
        header = [status.describe()]
        if page.start > page.asked:
            header.append(
                f"[characters {page.asked:,}-{page.start:,} were dropped: only the last "
                f"{self.background_output_chars:,} are kept]"
            )
        if page.text:
            header.append(f"[characters {page.start:,}-{page.next_offset:,} of {status.output_chars:,}]")
        elif status.ended:
            header.append("[no output after this offset; the run has ended]")
        else:
            header.append("[no new output yet; call again later with the same offset]")
        if page.more:
            header.append(f"[more: exec_output run_id={status.run_id} offset={page.next_offset}]")
        return "\n".join([*header, page.text]) if page.text else "\n".join(header)

    @capability("exec_stop", mutates=True, hints=ToolHints(title="Stop command", destructive=True, idempotent=True))
    def stop(self, run_id: str) -> str:
        """Kill a background run and every process it started.

        Args:
            run_id: E.g. "r1".
        """
        run = self._run(run_id)
        if not run.stop():
            return f"It had already ended. {run.status(seen=True).describe()}"
        run.wait(STOP_WAIT_S)
        return run.status(seen=True).describe()

    @capability("exec_runs", hints=ToolHints(title="Background commands"))
    def runs(self) -> str | None:
        """Your background runs."""
        listed = [
            run
            for run in self.ask(self.bound(self._sandbox).runs_of(self._member), actor=ACTOR_NAME)
            if not run.ended or run.unseen_end
        ]
        if not listed:
            return None
        offered = self._run_tools()
        lines = [f"Your background runs ({', '.join(offered)}):" if offered else "Your background runs:"]
        for run in listed:
            status = run.status()
            since = status.started_at.strftime("%H:%M:%S UTC")
            state = f"running since {since}" if status.result is None else f"ended ({status.ending}); not read yet"
            lines.append(f"- {status.label}: {state}")
        return "\n".join(lines)

    def _journaled(
        self, cmd: str, timeout_s: float | None, *, limit_s: float | None = None
    ) -> contextlib.AbstractContextManager[Any]:
        """The workspace journal's block for this command (the team's ``workspace_commands``
        service, when a workspace card of this process offers it), so what the command changes
        is recorded as this member's change. ``limit_s`` is the card's deadline for it
        (default ``timeout_s``; ``background_timeout_s`` for a background run)."""
        service = self._team.service(WORKSPACE_COMMANDS) if self._team is not None else None
        if service is None or self._workspace is None:
            return contextlib.nullcontext()
        limit = self.timeout_s if limit_s is None else limit_s
        deadline = limit if timeout_s is None else min(timeout_s, limit)
        block: contextlib.AbstractContextManager[Any] = service(self._workspace, self._member, cmd, deadline)
        return block


def _answer(result: ExecResult, output_chars: int) -> str:
    """What the model reads for ``result``: the rendered result, or the error it amounts to.

    Raises:
        RetriableError: the command was refused (the message says why and what to do), or
            stopped at the disk quota (with its output, in the untrusted envelope).
        ToolTimeout: the command was stopped at its deadline (with its output).
        ToolFailed: the sandbox could not run it, or shut down while it ran.
        CallCancelled: the call was cancelled; the command was killed or never started.
    """
    if result.error is not None:
        if result.stopped == CANCEL_STOP:
            raise CallCancelled(CANCELLED_MESSAGE)
        if result.refused:
            raise RetriableError(result.error)
        raise ToolFailed(f"{result.error} Tell the user; retrying will not help until the sandbox is fixed.")
    return _ended(result.render(output_chars), result.stopped)


_TIMED_OUT = (
    "exec_command: the command did not finish in time and was killed. Make it faster or run it in smaller parts."
)
"""What a command killed at its deadline tells the model when the call's deadline is not known."""


def _ended(text: str, stopped: str | None, replayed: str = "", *, timed_out: str = _TIMED_OUT) -> str:
    """What the model reads for a command that ran and printed ``text`` (rendered), stopped
    as ``stopped`` says (``None``: it ended by itself), or the error that amounts to.

    ``replayed`` heads the answer (and the error's message) when it is an earlier call's;
    ``timed_out`` is what a command stopped at its deadline is told (``ExecTool._timeout_text``).

    Raises:
        RetriableError: stopped at the disk quota.
        ToolTimeout: stopped at its deadline.
        ToolFailed: stopped because the sandbox shut down; or a replay of a cancelled call.
        CallCancelled: the call was cancelled and its command killed.
    """
    head = f"{replayed}\n" if replayed else ""
    if stopped == "timeout":
        raise ToolTimeout(f"{head}{timed_out} What it printed:\n" + wrap_untrusted(text, "exec_command"))
    if stopped == QUOTA_STOP:
        raise RetriableError(
            f"{head}exec_command: the command was stopped at the workspace's disk quota. What it printed:\n"
            + wrap_untrusted(text, "exec_command")
        )
    if stopped == CANCEL_STOP:
        if not replayed:
            raise CallCancelled(CANCELLED_MESSAGE)
        # Nobody heard the first answer: the retry is told, and must not run it blindly again.
        raise ToolFailed(
            f"{head}Its caller cancelled it while the command ran: the command was killed part-way and may "
            "have changed things. Check what it changed; to run it again, send it as a new call (with a new "
            "idempotency key). What it printed:\n" + wrap_untrusted(text, "exec_command")
        )
    if stopped is not None:
        raise ToolFailed(
            f"{head}exec_command: the command was stopped because the sandbox shut down. Tell the user. "
            "What it printed:\n" + wrap_untrusted(text, "exec_command")
        )
    return head + text


def _replayed(earlier: EarlierCall, timed_out: str = _TIMED_OUT) -> str:
    """What a retry of a keyed call reads: the first call's answer, replayed, or what became of it
    (``timed_out``: what a command stopped at its deadline is told).

    Raises:
        RetriableError, ToolTimeout, ToolFailed: the first call's answer was that error.
    """
    if earlier.answer is None:
        return earlier.message
    return _ended(earlier.answer, earlier.stopped, REPLAYED, timed_out=timed_out)
