"""``ExecTool``: shell commands in the team workspace, run by the team's sandbox.

Channels: ``exec_command`` is a TOOL_CALL and a COMMAND. One sandbox actor per team
(``#SandboxActor``, race-free ``get_or_spawn``) serves every agent's calls; commands run
in worker threads, so one agent's long build does not hold up another's ``ls``.

What the model reads is always a string, never an exception: the exit code, stdout and
stderr (each capped, saying what was cut) inside the untrusted-output envelope, or a
``CommandNotAllowedError: ...`` / ``SandboxError: ...`` line. A command over its timeout
is killed with its whole process group and reported with exit code 124.

The workspace is the same tree ``WorkspaceTool`` edits (``core.settings.workspace_dir``),
and the workspace's read-before-write gate compares file hashes, so files a command
changed are seen by every agent's next write.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, PrivateAttr

from toolcards.actors.asking import ask
from toolcards.core.card import ToolCard, capability
from toolcards.core.channels import COMMAND, TOOL_CALL, Channels
from toolcards.core.observer import ActorToolObserver
from toolcards.core.params import BaseToolParam
from toolcards.core.settings import workspace_dir
from toolcards.sandbox.actor import SandboxActor, sandbox_actor_class
from toolcards.sandbox.models import DEFAULT_ALLOWED_COMMANDS, ExecLimits, ExecResult

__all__ = ["ExecCommand", "ExecTool"]

ACTOR_NAME = "#SandboxActor"


class ExecCommand(BaseToolParam):
    """``exec_command``: run one shell command in the workspace."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}


class ExecTool(ToolCard):
    """Shell commands in the team workspace, contained by a sandbox backend.

    ``mode``: ``auto`` (probe bwrap → seatbelt → docker → local, warning once if it falls
    back to local), ``local``, ``bwrap``, ``docker``, ``seatbelt``, or any mode registered
    in ``toolcards.sandbox.SANDBOX_ACTOR_CLASSES``. ``options`` are the backend's own
    settings (e.g. ``{"allow_network": true}`` for bwrap, ``{"image": ...}`` for docker).
    """

    kind: ClassVar[str] = "exec"
    requires_observer: ClassVar[type | None] = ActorToolObserver

    mode: str = "auto"
    workspace_id: str | None = None
    timeout_s: float = Field(default=30.0, gt=0, le=3600)
    limits: ExecLimits = Field(default_factory=ExecLimits)
    allowed_commands: list[str] = Field(default_factory=lambda: list(DEFAULT_ALLOWED_COMMANDS))
    """First words a command may start with (a usability filter; the backend is the security)."""
    options: dict[str, Any] = Field(default_factory=dict)
    exec_command: ExecCommand | bool = True
    _sandbox: Any = PrivateAttr(default=None)

    def on_bind(self, observer: Any) -> None:
        agent: ActorToolObserver = observer
        actor_class: type[SandboxActor] = sandbox_actor_class(self.mode)
        options = {**self.options, "allowed_commands": tuple(self.allowed_commands)}
        self._sandbox = agent.team.get_or_spawn(
            ACTOR_NAME,
            actor_class,
            workspace_dir(self.workspace_id or agent.team_id),
            self.limits,
            self.timeout_s,
            options,
        )

    # The result renders within limits.output_chars (head and tail of each stream kept); the
    # pipeline budget only has to leave room for the header lines.
    @capability(
        "exec_command", name="exec_command", serves={TOOL_CALL, COMMAND}, untrusted_output=True, output_budget=21_000
    )
    def run(self, cmd: str, cwd: str = "", timeout_s: float | None = None) -> str:
        """Run a shell command in the team workspace; returns exit code, stdout and stderr.

        Args:
            cmd: The command line, e.g. "pytest -q tests".
            cwd: Directory relative to the workspace root.
            timeout_s: Seconds before it is killed (at most the team's limit).
        """
        if self._sandbox is None:
            self.get_observer()  # raises the right error for an unbound or lost card
        result: ExecResult = ask(ask(self._sandbox.run(cmd, cwd, timeout_s), actor=ACTOR_NAME), actor=ACTOR_NAME)
        return result.render(self.limits.output_chars)
