"""What a command can learn of the process running toolcards: its parent's and grandparent's
``/proc/<pid>/environ``, from a real host process holding a secret in its environment.

A variable set with ``os.environ`` after start is not in ``/proc/<pid>/environ`` (that shows
the environment the process was started with), so each case starts a fresh interpreter
with the secret in its starting environment, as a server started with API keys would be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandbox.conftest import backend_class
from toolcards.sandbox._local import LAUNCHER, launcher_argv

SECRET = "sk-toolcards-test-secret-4242"

SERVER = """
import json, sys
from pathlib import Path
from toolcards.sandbox._actor import BwrapSandboxActor, LocalSandboxActor
cls = {"local": LocalSandboxActor, "bwrap": BwrapSandboxActor}[sys.argv[1]]
options = {"allowed_commands": ()}
if sys.argv[3] == "hide":
    options["hide_host_process"] = True
actor = cls(Path(sys.argv[2]), options=options)
def found(cmd):
    result = actor.execute(cmd)
    return "SECRET_FOUND" in result.stdout
parent = found("tr '\\\\0' '\\\\n' < /proc/$PPID/environ | grep -q SECRET_VALUE && echo SECRET_FOUND")
grandparent = found(
    "gp=$(awk '/^PPid/{print $2}' /proc/$PPID/status); "
    "tr '\\\\0' '\\\\n' < /proc/$gp/environ | grep -q SECRET_VALUE && echo SECRET_FOUND"
)
scan = found("cat /proc/[0-9]*/environ 2>/dev/null | tr '\\\\0' '\\\\n' | grep -q SECRET_VALUE && echo SECRET_FOUND")
print(json.dumps({"parent": parent, "grandparent": grandparent, "scan": scan}))
"""


def probe(mode: str, workspace: Path, *, hide: bool = False) -> dict[str, bool]:
    """Start a host process with the secret in its environment; report where a command found it."""
    script = SERVER.replace("SECRET_VALUE", SECRET)
    done = subprocess.run(
        [sys.executable, "-c", script, mode, str(workspace), "hide" if hide else "-"],
        env={**os.environ, "OPENAI_API_KEY": SECRET},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_the_launcher_stays_the_commands_parent_and_passes_its_status_on() -> None:
    argv = launcher_argv("echo $PPID; exit 7")
    assert argv[2] == LAUNCHER
    launcher = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env={"PATH": os.environ["PATH"]})
    stdout, _ = launcher.communicate(timeout=10)
    assert launcher.returncode == 7
    assert int(stdout) == launcher.pid


def test_a_local_commands_parent_holds_no_secret(workspace: Path) -> None:
    assert probe("local", workspace)["parent"] is False


def test_local_mode_does_not_hide_the_host_process_itself(workspace: Path) -> None:
    # Documented (docs/cards/sandbox.md, local.py): the launcher's parent is the host
    # process, and a process of the same user reads its /proc environ.
    found = probe("local", workspace)
    assert found["grandparent"] and found["scan"]


def test_hide_host_process_stops_non_root_commands_only(workspace: Path) -> None:
    found = probe("local", workspace, hide=True)
    assert found["parent"] is False
    # Root keeps CAP_SYS_PTRACE: a non-dumpable process is still readable to it.
    assert found["grandparent"] is (os.geteuid() == 0)


def test_bwrap_commands_see_no_host_process(workspace: Path) -> None:
    backend_class("bwrap")
    assert probe("bwrap", workspace) == {"parent": False, "grandparent": False, "scan": False}


@pytest.mark.skipif(sys.platform.startswith("linux"), reason="the refusal is for other systems")
def test_hide_host_process_needs_linux(workspace: Path) -> None:
    from toolcards.errors import WiringError
    from toolcards.sandbox._actor import LocalSandboxActor

    with pytest.raises(WiringError, match="needs Linux"):
        LocalSandboxActor(workspace, options={"hide_host_process": True})
