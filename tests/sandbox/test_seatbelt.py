"""The seatbelt backend: the generated profile and argv; real runs only on macOS."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.sandbox.conftest import run_via_proxy
from toolcards.sandbox import SeatbeltOptions
from toolcards.sandbox._actor import SeatbeltSandboxActor
from toolcards.sandbox._seatbelt import seatbelt_argv, seatbelt_available, seatbelt_profile


def _block(profile: str, opener: str) -> str:
    start = profile.index(opener)
    return profile[start : profile.index("\n)", start)]


def test_profile_denies_by_default_and_has_no_network() -> None:
    profile = seatbelt_profile(allow_network=False, read_params=0)
    assert profile.startswith("(version 1)\n(deny default)\n")
    assert "network" not in profile


def test_profile_writes_only_to_the_workspace_tmpdir_and_devices() -> None:
    writes = _block(seatbelt_profile(allow_network=False, read_params=0), "(allow file-write*")
    subpaths = [line.strip() for line in writes.splitlines() if "subpath" in line]
    assert subpaths == ['(subpath (param "WORKSPACE"))', '(subpath (param "TMPDIR"))']
    assert all("/dev/" in line for line in writes.splitlines()[1:] if "literal" in line or "regex" in line)


def test_profile_reads_extra_paths_through_parameters() -> None:
    reads = _block(seatbelt_profile(allow_network=False, read_params=2), "(allow file-read*")
    assert '(subpath (param "RO_0"))' in reads and '(subpath (param "RO_1"))' in reads
    assert '(subpath (param "WORKSPACE"))' in reads
    assert '"/Users' not in reads


def test_network_only_when_allowed() -> None:
    assert "(allow network*)" in seatbelt_profile(allow_network=True, read_params=0)


def test_argv_passes_real_paths_as_parameters(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    argv = seatbelt_argv(
        workspace=tmp_path / "link",
        tmpdir=tmp_path,
        command=["bash", "-c", "ls"],
        options=SeatbeltOptions(ro_paths=("/opt/tools",)),
        python_prefixes=("/opt/py",),
    )
    assert argv[0] == "/usr/bin/sandbox-exec" and argv[1] == "-p"
    params = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-D"]
    assert params == [
        f"WORKSPACE={os.path.realpath(tmp_path / 'real')}",
        f"TMPDIR={os.path.realpath(tmp_path)}",
        f"RO_0={os.path.realpath('/opt/py')}",
        f"RO_1={os.path.realpath('/opt/tools')}",
    ]
    assert argv[-3:] == ["bash", "-c", "ls"]
    assert '(param "RO_1")' in argv[2]


def test_not_available_off_macos() -> None:
    if sys.platform != "darwin":
        assert not seatbelt_available()


FAKE_SANDBOX_EXEC = """#!/bin/sh
# Drops -p PROFILE and -D KEY=VALUE pairs, records the parameters, runs the command unsandboxed.
while [ "$#" -gt 0 ]; do
  case "$1" in
    -p) shift 2 ;;
    -D) echo "$2" >> "$FAKE_SEATBELT_LOG"; shift 2 ;;
    *) break ;;
  esac
done
exec "$@"
"""


def test_actor_runs_through_sandbox_exec_with_a_team_tmpdir(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "sandbox-exec"
    fake.write_text(FAKE_SANDBOX_EXEC)
    fake.chmod(0o755)
    log = tmp_path / "params.log"
    monkeypatch.setenv("FAKE_SEATBELT_LOG", str(log))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-leak")
    # sandbox-exec runs with the command's allowlisted environment: pass the log path on.
    options = {"allowed_commands": (), "sandbox_exec_path": str(fake), "pass_env": ("FAKE_SEATBELT_LOG",)}
    ref = SeatbeltSandboxActor.start(workspace, options=options)
    result = run_via_proxy(ref, 'echo "$TMPDIR" && env')
    assert result.exit_code == 0, result.render()
    tmpdir = result.stdout.splitlines()[0]
    params = log.read_text().splitlines()
    assert f"WORKSPACE={os.path.realpath(workspace)}" in params
    assert f"TMPDIR={os.path.realpath(tmpdir)}" in params
    assert "do-not-leak" not in result.stdout
    assert Path(tmpdir).is_dir()
    ref.stop()
    assert not Path(tmpdir).exists()


@pytest.mark.skipif(not seatbelt_available(), reason="sandbox-exec exists only on macOS")
def test_real_run_writes_only_inside_the_workspace(workspace: Path, tmp_path: Path) -> None:
    ref = SeatbeltSandboxActor.start(workspace, options={"allowed_commands": ()})
    result = run_via_proxy(ref, f"echo ok > inside && echo no > {tmp_path}/outside; cat inside")
    assert result.stdout == "ok\n"
    assert not (tmp_path / "outside").exists()
