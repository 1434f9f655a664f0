"""Run agents' shell commands in a team's workspace, contained, with limits.

One :class:`SandboxActor` per team runs every agent's commands concurrently; the backend
(``local``, ``bwrap``, ``docker``, ``seatbelt``, or ``auto`` to probe for the strongest)
decides what a command can see and touch. Each call carries its card's
:class:`CommandPolicy` (allowlist, limits, disk quota, deadline), applied to that command
alone. A misbehaving command is stopped and reported in its :class:`ExecResult`, never
raised; ``ExecTool`` turns refusals and stopped commands into errors for the model.

A command may also run in the background (:mod:`.runs`): started at once, owned by the
member that started it, read and stopped later by its run id. With ``bwrap``, a command may
be held to a list of hosts (:mod:`.hosts`): its only way out is a proxy that checks each
connection (:mod:`.egress`, :mod:`.forwarder`).
"""

from __future__ import annotations

from toolcards.sandbox._actor import (
    SANDBOX_ACTOR_CLASSES,
    SandboxActor,
    SandboxProxy,
)
from toolcards.sandbox._hosts import HostAllowlist
from toolcards.sandbox._models import (
    DEFAULT_ALLOWED_COMMANDS,
    BwrapOptions,
    CommandPolicy,
    DockerOptions,
    ExecLimits,
    ExecResult,
    LocalOptions,
    SandboxOptions,
    SeatbeltOptions,
)
from toolcards.sandbox._runs import BackgroundRun, RunLog, RunOutputPage, RunRegistry, RunState, RunStatus
from toolcards.sandbox._tool import (
    ExecCommandParam,
    ExecOutputParam,
    ExecRunsParam,
    ExecStatusParam,
    ExecStopParam,
    ExecTool,
)

__all__ = [
    "DEFAULT_ALLOWED_COMMANDS",
    "SANDBOX_ACTOR_CLASSES",
    "BackgroundRun",
    "BwrapOptions",
    "CommandPolicy",
    "DockerOptions",
    "ExecCommandParam",
    "ExecLimits",
    "ExecOutputParam",
    "ExecResult",
    "ExecRunsParam",
    "ExecStatusParam",
    "ExecStopParam",
    "ExecTool",
    "HostAllowlist",
    "LocalOptions",
    "RunLog",
    "RunOutputPage",
    "RunRegistry",
    "RunState",
    "RunStatus",
    "SandboxActor",
    "SandboxOptions",
    "SandboxProxy",
    "SeatbeltOptions",
]
