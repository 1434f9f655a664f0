"""``ExecTool``: shell commands in the team workspace, run by the team's sandbox.

Channels: ``exec_command`` is a TOOL_CALL and a COMMAND. One sandbox actor per team
(``#SandboxActor``, race-free ``get_or_spawn``) serves every agent's calls; commands run
in worker threads, so one agent's long build does not hold up another's ``ls``.

Each card's settings are its own. Every call carries the card's :class:`CommandPolicy`
(allowlist, limits, disk quota, deadline, backend options) and the shared actor applies it
to that command alone, so a reviewer restricted to ``ls`` and a builder with the defaults
can be in one team. What cannot differ inside one team (the mode, the workspace, the
number of concurrent commands, a docker container's settings) is checked when the card
binds: a card that disagrees with the team's sandbox is a ``WiringError`` naming both
cards and every difference, never a silent merge.

What the model reads: a command that ran (whatever its exit code) returns the exit code,
stdout and stderr (each capped, saying what was cut) inside the untrusted-output envelope.
A command that did not run or was stopped is an error, so adapters report it as one
(pydantic-ai retry, MCP ``isError``): a refusal (not allowed, bad ``cwd``, too long) and a
command stopped at the disk quota are ``RetriableError``; one stopped at its deadline is
``ToolTimeout`` (exit code 124); the sandbox failing or shutting down is ``ToolFailed``.
Output of a stopped command is included, inside the envelope.

The workspace is the same tree ``WorkspaceTool`` edits (``fs.locations.workspace_dir``),
and the workspace's read-before-write gate compares file hashes, so files a command
changed are seen by every agent's next write. When a workspace card of the same process
keeps the tree's journal, each command runs inside the team's ``workspace_commands``
service (:data:`toolcards.core.services.WORKSPACE_COMMANDS`): the tree is scanned before and
after, and what the command changed is journaled as this member's ``exec_command``, so it can
be undone.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Any, ClassVar, cast

from pydantic import Field, PrivateAttr

from toolcards.core.bounds import unlisted_bound
from toolcards.core.card import ToolCard, capability
from toolcards.core.channels import COMMAND, TOOL_CALL, Channels
from toolcards.core.observer import ActorToolObserver
from toolcards.core.output import wrap_untrusted
from toolcards.core.params import BaseToolParam
from toolcards.core.services import WORKSPACE_COMMANDS
from toolcards.errors import RetriableError, ToolFailed, ToolTimeout, WiringError
from toolcards.fs.locations import WorkspaceId, workspace_dir
from toolcards.sandbox.actor import QUOTA_STOP, SandboxActor, SandboxProxy, sandbox_actor_class
from toolcards.sandbox.guards import MAX_COMMAND_CHARS
from toolcards.sandbox.models import DEFAULT_ALLOWED_COMMANDS, CommandPolicy, ExecLimits, ExecResult

__all__ = ["ExecCommandParam", "ExecTool"]

ACTOR_NAME = "#SandboxActor"


class ExecCommandParam(BaseToolParam):
    """``exec_command``: run one shell command in the workspace."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


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
    exec_command: ExecCommandParam | bool = True
    _sandbox: SandboxProxy | None = PrivateAttr(default=None)
    _policy: CommandPolicy | None = PrivateAttr(default=None)
    _workspace: Path | None = PrivateAttr(default=None)
    _team: Any = PrivateAttr(default=None)
    _member: str = PrivateAttr(default="")

    def on_bind(self, observer: Any) -> None:
        agent: ActorToolObserver = observer
        actor_class: type[SandboxActor] = sandbox_actor_class(self.mode)
        workspace = workspace_dir(self.workspace_id or agent.team_id)
        options = {**self.options, "allowed_commands": tuple(self.allowed_commands)}
        policy = actor_class.policy_for(self.limits, self.timeout_s, options)
        label = f"ExecTool of {agent.address.handle}"
        try:
            sandbox = agent.team.get_or_spawn(
                ACTOR_NAME,
                actor_class,
                workspace,
                policy.limits,
                policy.timeout_s,
                policy.options,
                owner=label,
                proxy=SandboxProxy,
            )
        except TypeError:
            # The team's sandbox is of another class (another mode): report it below.
            ref = agent.team.tool_actors().get(ACTOR_NAME)
            if ref is None or not ref.is_alive() or issubclass(ref.actor_class, actor_class):
                raise
            sandbox = cast(SandboxProxy, ref.proxy())
        differences = self.ask(sandbox.conflicts(actor_class.mode, workspace, policy), actor=ACTOR_NAME)
        if differences:
            owner: str = self.ask(sandbox.owner, actor=ACTOR_NAME)
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

    def describe(self, field: str) -> str | None:
        """What this card's commands may do: the allowed first words and the network."""
        if field != "exec_command" or self._policy is None:
            return None
        options = self._policy.options
        allowed = options.allowed_commands
        words = f"Allowed commands: {', '.join(allowed)}." if allowed else ""
        # Only a backend that isolates the network can promise there is none.
        if hasattr(options, "allow_network") and not options.allow_network:
            words = f"{words} No network.".strip()
        return words or None

    # The result renders within limits.output_chars (head and tail of each stream kept); the
    # pipeline budget only has to leave room for the header lines.
    @capability(
        "exec_command",
        untrusted_output=True,
        output_budget=21_000,
        mutates=True,  # a command may change any file of the workspace
    )
    def run(
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
        with self._journaled(cmd, timeout_s):
            running = self.ask(self.bound(self._sandbox).run(cmd, cwd, timeout_s, self._policy), actor=ACTOR_NAME)
            result: ExecResult = self.ask(running, actor=ACTOR_NAME)
        return _answer(result, self.limits.output_chars)

    def _journaled(self, cmd: str, timeout_s: float | None) -> contextlib.AbstractContextManager[Any]:
        """The workspace journal's block for this command (the team's ``workspace_commands``
        service, when a workspace card of this process offers it), so what the command changes
        is recorded as this member's change."""
        service = self._team.service(WORKSPACE_COMMANDS) if self._team is not None else None
        if service is None or self._workspace is None:
            return contextlib.nullcontext()
        deadline = self.timeout_s if timeout_s is None else min(timeout_s, self.timeout_s)
        block: contextlib.AbstractContextManager[Any] = service(self._workspace, self._member, cmd, deadline)
        return block


def _answer(result: ExecResult, output_chars: int) -> str:
    """What the model reads for ``result``: the rendered result, or the error it amounts to.

    Raises:
        RetriableError: the command was refused (the message says why and what to do), or
            stopped at the disk quota (with its output, in the untrusted envelope).
        ToolTimeout: the command was stopped at its deadline (with its output).
        ToolFailed: the sandbox could not run it, or shut down while it ran.
    """
    if result.error is not None:
        if result.refused:
            raise RetriableError(result.error)
        raise ToolFailed(f"{result.error} Tell the user; retrying will not help until the sandbox is fixed.")
    text = result.render(output_chars)
    if result.stopped == "timeout":
        raise ToolTimeout(
            "exec_command: the command did not finish in time and was killed. Make it faster, run it in "
            "smaller parts, or pass a longer timeout_s (up to the card's limit). What it printed:\n"
            + wrap_untrusted(text, "exec_command")
        )
    if result.stopped == QUOTA_STOP:
        raise RetriableError(
            "exec_command: the command was stopped at the workspace's disk quota. What it printed:\n"
            + wrap_untrusted(text, "exec_command")
        )
    if result.stopped is not None:
        raise ToolFailed(
            "exec_command: the command was stopped because the sandbox shut down. Tell the user. What it printed:\n"
            + wrap_untrusted(text, "exec_command")
        )
    return text
