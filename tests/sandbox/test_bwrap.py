"""The bwrap backend: what a command can see and reach, and the argv that builds it."""

from __future__ import annotations

import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

from tests.sandbox.conftest import SandboxRef, run_via_proxy
from toolcards.sandbox import BwrapOptions
from toolcards.sandbox._actor import BwrapSandboxActor
from toolcards.sandbox._bwrap import bwrap_argv, bwrap_available, bwrap_path_env, snapshot_etc

needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap cannot run here")


def start(workspace: Path, **options: object) -> SandboxRef:
    return BwrapSandboxActor.start(workspace, options={"allowed_commands": (), **options})


def test_argv_isolates_by_default(tmp_path: Path) -> None:
    argv = bwrap_argv(
        workspace=tmp_path, rel_cwd=PurePosixPath("src"), command=["bash", "-c", "ls"], options=BwrapOptions()
    )
    assert argv[0] == "bwrap"
    for flag in ("--unshare-all", "--die-with-parent", "--new-session"):
        assert flag in argv
    assert "--share-net" not in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert argv[argv.index("--bind") + 1 : argv.index("--bind") + 3] == [str(tmp_path), "/workspace"]
    assert argv[argv.index("--chdir") + 1] == "/workspace/src"
    assert argv[-4:] == ["--", "bash", "-c", "ls"]


def test_private_tmp_is_mounted_before_every_bind(tmp_path: Path) -> None:
    # A bind under /tmp (toolcards' Python in a checkout under /tmp) must not be hidden by
    # the private /tmp mounted over it.
    options = BwrapOptions(ro_binds=("/tmp/some-tool",))
    argv = bwrap_argv(workspace=tmp_path, rel_cwd=PurePosixPath("."), command=["true"], options=options)
    tmpfs = argv.index("--tmpfs")
    binds = [i for i, arg in enumerate(argv) if arg in ("--ro-bind", "--ro-bind-try", "--bind") and i > 1]
    python_and_extra = [i for i in binds if argv[i + 1] not in ("/usr",) and not argv[i + 1].startswith("/usr/")]
    assert all(i > tmpfs for i in python_and_extra)


def test_argv_shares_the_network_only_when_asked(tmp_path: Path) -> None:
    argv = bwrap_argv(
        workspace=tmp_path, rel_cwd=PurePosixPath("."), command=["true"], options=BwrapOptions(allow_network=True)
    )
    assert "--share-net" in argv


def test_path_puts_the_workspace_venv_first_then_the_bound_python(tmp_path: Path) -> None:
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    dirs = bwrap_path_env(tmp_path, BwrapOptions()).split(":")
    assert dirs[0] == "/workspace/.venv/bin"
    assert dirs[1] == str(Path(sys.prefix) / "bin")
    assert str(Path(sys.prefix) / "bin") not in bwrap_path_env(tmp_path, BwrapOptions(bind_python=False))


def test_etc_snapshot_copies_only_allowlisted_entries(tmp_path: Path) -> None:
    source = tmp_path / "etc"
    (source / "ssl" / "certs").mkdir(parents=True)
    (source / "ssl" / "private").mkdir(parents=True)
    (source / "passwd").write_text("root:x:0:0::/root:/bin/bash\n")
    (source / "shadow").write_text("root:$6$secret\n")
    (source / "ssl" / "private" / "key.pem").write_text("PRIVATE")
    snapshot = snapshot_etc(tmp_path / "copy", source)
    assert (snapshot.path / "passwd").read_text().startswith("root:")
    assert not (snapshot.path / "shadow").exists()
    assert not (snapshot.path / "ssl" / "private").exists()
    assert snapshot.directories == ("ssl/certs",)


@needs_bwrap
def test_files_outside_the_workspace_are_not_visible(tmp_path: Path, workspace: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    result = run_via_proxy(start(workspace), f"cat {secret}; cat /etc/shadow; ls /root")
    assert "top secret" not in result.stdout
    assert "No such file" in result.stderr
    assert "root:" not in result.stdout


@needs_bwrap
def test_system_is_read_only_and_tmp_is_private(workspace: Path) -> None:
    result = run_via_proxy(start(workspace), "touch /usr/x; echo scratch > /tmp/f && cat /tmp/f")
    assert "Read-only file system" in result.stderr
    assert result.stdout == "scratch\n"


@needs_bwrap
def test_python_inside_is_the_bound_interpreter(workspace: Path) -> None:
    result = run_via_proxy(start(workspace), "python -c 'import sys; print(sys.prefix)'")
    assert result.exit_code == 0, result.render()
    assert result.stdout.strip() == sys.prefix


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@needs_bwrap
def test_tcp_to_a_host_listener_is_refused(workspace: Path, listener: int) -> None:
    script = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {listener}), timeout=3)'"
    result = run_via_proxy(start(workspace), script)
    assert result.exit_code != 0
    assert "ConnectionRefusedError" in result.stderr


@needs_bwrap
def test_allow_network_reaches_the_listener(workspace: Path, listener: int) -> None:
    script = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {listener}), timeout=3)'"
    result = run_via_proxy(start(workspace, allow_network=True), script)
    assert result.exit_code == 0, result.render()


def test_missing_bwrap_is_a_sandbox_error(workspace: Path) -> None:
    ref = start(workspace, bwrap_path="/nonexistent/bwrap")
    result = run_via_proxy(ref, "echo hi")
    assert result.exit_code is None
    assert result.error is not None and result.error.startswith("SandboxError: could not start")


@needs_bwrap
def test_etc_snapshot_is_removed_at_stop(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    ref = start(workspace)
    run_via_proxy(ref, "true")
    assert [path.name.startswith("toolcards-etc-") for path in temp.iterdir()] == [True]
    ref.stop()
    assert list(temp.iterdir()) == []
