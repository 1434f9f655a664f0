"""Fixtures for the sandbox tests: a workspace, actors per backend that runs here, a fake
``docker`` that records its calls, and helpers to find processes a command may have left
behind."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pykka
import pytest

from toolcards.sandbox import ExecLimits, ExecResult, SandboxActor
from toolcards.sandbox._actor import BwrapSandboxActor, LocalSandboxActor
from toolcards.sandbox._bwrap import bwrap_available
from toolcards.sandbox._cgroup import cgroup_support

HOST_BACKENDS = ["local", "bwrap"]


@pytest.fixture(autouse=True)
def _stop_actors() -> Iterator[None]:
    yield
    pykka.ActorRegistry.stop_all()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def backend_class(mode: str) -> type[SandboxActor]:
    if mode == "bwrap" and not bwrap_available():
        pytest.skip("bubblewrap is not installed or cannot create namespaces here")
    return BwrapSandboxActor if mode == "bwrap" else LocalSandboxActor


SandboxRef = pykka.ActorRef[Any]
"""A started sandbox actor of any backend (``ActorRef`` is invariant in its actor class)."""

StartSandbox = Callable[..., SandboxRef]


@pytest.fixture(params=HOST_BACKENDS)
def sandbox(request: pytest.FixtureRequest, workspace: Path) -> StartSandbox:
    """Start a sandbox actor of the parametrized backend (every command allowed); returns its ref."""
    cls = backend_class(request.param)

    def start(limits: ExecLimits | None = None, timeout_s: float = 10.0, **options: Any) -> SandboxRef:
        options.setdefault("allowed_commands", ())
        return cls.start(workspace, limits, timeout_s, options)

    return start


def run_via_proxy(ref: SandboxRef, cmd: str, cwd: str = "", timeout_s: float | None = None) -> ExecResult:
    """Run through the actor's proxy exactly as a tool would (future of a future)."""
    proxy = ref.proxy()
    inner: pykka.Future[ExecResult] = proxy.run(cmd, cwd, timeout_s).get(timeout=30)
    return inner.get(timeout=60)


def marker() -> str:
    """A sleep duration no other process uses, so the process can be found in /proc."""
    return f"{30 + uuid.uuid4().int % 10_000 / 10_000:.4f}"


def wait_until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """Poll ``predicate`` until it holds or ``timeout_s`` passes (test helper only)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def fork_bomb_contained() -> bool:
    """Whether a fork bomb's process count is capped here (cgroup, or RLIMIT_NPROC as non-root)."""
    return cgroup_support().version is not None or os.geteuid() != 0


FAKE_DOCKER = """#!/bin/sh
# Records its argv (one argument per line, a blank line after each call) and prints canned output.
printf '%s\\n' "$@" >> "$FAKE_DOCKER_LOG"
printf '\\n' >> "$FAKE_DOCKER_LOG"
case "$1" in
  image)
    if [ -n "$FAKE_DOCKER_NO_IMAGE" ]; then echo "Error: No such image" >&2; exit 1; fi
    echo sha256:abc ;;
  run) echo 0123456789abcdef ;;
  exec) echo "fake output"; exit "${FAKE_DOCKER_EXIT:-0}" ;;
  rm) echo removed ;;
esac
"""


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``docker`` that records its argv in the returned file (read it with :func:`calls`)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "docker"
    exe.write_text(FAKE_DOCKER)
    exe.chmod(0o755)
    log = tmp_path / "docker.log"
    log.touch()
    monkeypatch.setenv("FAKE_DOCKER_LOG", str(log))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def calls(log: Path) -> list[list[str]]:
    return [block.splitlines() for block in log.read_text().split("\n\n") if block]
