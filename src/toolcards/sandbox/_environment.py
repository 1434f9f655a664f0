"""The environment a command sees: an allowlist, never the host's environment.

Only locale and terminal variables are copied from the host (plus names the options list
in ``pass_env``); ``HOME`` is the workspace, ``PATH`` is built by the backend. API keys,
tokens and every other host variable stay out of the command's environment. (That alone
does not hide them: a ``local`` command may read another process's ``/proc/<pid>/environ``;
see :mod:`toolcards.sandbox._local`.)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from toolcards.sandbox._models import SandboxOptions

__all__ = ["COPIED_ENV_NAMES", "python_bin_dirs", "sandbox_env"]

COPIED_ENV_NAMES: tuple[str, ...] = ("LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ")
"""Host variables copied in when set: they change how text is printed, and carry no secret."""


def sandbox_env(
    *,
    home: str,
    path: str,
    options: SandboxOptions,
    tmpdir: str | None = None,
    host_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The complete environment for a command.

    ``options.env`` is applied last, so a developer can override any value on purpose.
    """
    source = os.environ if host_env is None else host_env
    env = {name: source[name] for name in (*COPIED_ENV_NAMES, *options.pass_env) if name in source}
    env.setdefault("LANG", "C.UTF-8")
    env.setdefault("TERM", "dumb")
    env["HOME"] = home
    env["PATH"] = path
    if tmpdir is not None:
        env["TMPDIR"] = tmpdir
    env.update(options.env)
    return env


def python_bin_dirs() -> list[str]:
    """``bin`` directories of the Python running toolcards: its venv first, then its base."""
    dirs = [str(Path(sys.prefix) / "bin")]
    base = str(Path(sys.base_prefix) / "bin")
    if base not in dirs:
        dirs.append(base)
    return dirs
