"""A command's ``cwd`` as the model gives it: every one the OS cannot use is refused in the
workspace's own words, before anything runs, on every backend."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.sandbox.conftest import backend_class, calls
from toolcards import ToolFactory
from toolcards.errors import RetriableError
from toolcards.fs._locations import workspace_dir
from toolcards.sandbox import _actor as sandbox_actor
from toolcards.sandbox._actor import LocalSandboxActor
from toolcards.sandbox._cwd import CWD_ESCAPE_MESSAGE, resolve_cwd
from toolcards.sandbox._guards import CommandRefused
from toolcards.sandbox._tool import ExecCommandParam, ExecTool
from toolcards.testing import FakeObserver

MOUNT = "/workspace"
"""Where bwrap and docker show the workspace to a command; no message may name it."""
MARK = 'touch "$HOME/ran"'
"""The command every case tries: ``$HOME`` is the workspace on every backend."""

# -- resolve_cwd -------------------------------------------------------------------------------


def test_cwd_root_and_subdirectory_resolve(tmp_path: Path) -> None:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    assert resolve_cwd(tmp_path, "") == (tmp_path, PurePosixPath("."))
    assert resolve_cwd(tmp_path, "src/pkg") == (tmp_path / "src" / "pkg", PurePosixPath("src/pkg"))
    assert resolve_cwd(tmp_path, "./src//pkg/../pkg/") == (tmp_path / "src" / "pkg", PurePosixPath("src/pkg"))


@pytest.mark.parametrize("cwd", ["..", "../other", "src/../../x", "/etc", "/"])
def test_cwd_outside_the_workspace_is_refused(tmp_path: Path, cwd: str) -> None:
    (tmp_path / "src").mkdir()
    with pytest.raises(CommandRefused, match=CWD_ESCAPE_MESSAGE):
        resolve_cwd(tmp_path, cwd)


def test_cwd_symlink_leaving_the_workspace_is_refused(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    (workspace / "up").symlink_to("..")
    for cwd in ("link", "up", "up/ws"):
        with pytest.raises(CommandRefused, match=CWD_ESCAPE_MESSAGE):
            resolve_cwd(workspace, cwd)


def test_cwd_symlinks_inside_the_workspace_resolve_as_the_kernel_does(tmp_path: Path) -> None:
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    (tmp_path / "relative").symlink_to("real/deep")
    assert resolve_cwd(tmp_path, "alias")[1] == PurePosixPath("real")
    assert resolve_cwd(tmp_path, "relative")[1] == PurePosixPath("real/deep")
    # '..' after a link leaves the link's target, not the link's directory.
    assert resolve_cwd(tmp_path, "relative/..")[1] == PurePosixPath("real")


def test_missing_cwd_says_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(CommandRefused, match="mkdir -p nope"):
        resolve_cwd(tmp_path, "nope")


def test_a_cwd_removed_before_its_command_started_is_a_refusal_without_the_host_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)

    def checked_then_removed(root: Path, cwd: str, *, mount: str | None = None) -> tuple[Path, PurePosixPath]:
        resolved = resolve_cwd(root, cwd, mount=mount)
        (root / "sub").rmdir()  # as another command would, between the check and the start
        return resolved

    monkeypatch.setattr(sandbox_actor, "resolve_cwd", checked_then_removed)
    result = LocalSandboxActor(workspace, options={"allowed_commands": ()}).execute(MARK, cwd="sub")
    assert result.refused and result.error is not None
    assert result.error.startswith("SandboxError: cwd 'sub' was removed before the command could start")
    assert str(tmp_path) not in result.error and not (workspace / "ran").exists()


# -- exec_command, every backend ---------------------------------------------------------------

Run = Callable[..., str]


@pytest.fixture(params=["local", "bwrap", "docker"])
def mode(request: pytest.FixtureRequest, fake_docker: Path) -> str:
    if request.param != "docker":
        backend_class(request.param)  # skips bwrap where it cannot run
    return str(request.param)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The team's workspace: a directory, a file, symlink loops, and a symlink out of it."""
    root = workspace_dir("team-1")
    root.mkdir(parents=True, exist_ok=True)
    (root / "sub").mkdir()
    (root / "notes.txt").write_text("notes\n")
    (root / "loop").symlink_to("loop")
    (root / "ping").symlink_to("pong")
    (root / "pong").symlink_to("ping")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out").symlink_to(outside)
    return root


@pytest.fixture
def run(mode: str, tree: Path, alice: FakeObserver) -> Run:
    card = ExecTool(mode=mode, allowed_commands=[])
    command: Run = ToolFactory([card], observer=alice).get_commands()[ExecCommandParam]
    return command


def refusal(run: Run, cwd: str) -> str:
    """The message of the ``RetriableError`` that ``cwd`` must give."""
    with pytest.raises(RetriableError) as caught:
        run(cmd=MARK, cwd=cwd)
    return str(caught.value)


def assert_in_workspace_terms(message: str, tree: Path, tmp_path: Path) -> None:
    for host in {str(tree), os.path.realpath(tree), str(tmp_path), os.path.realpath(tmp_path)}:
        assert host not in message, message
    assert MOUNT not in message, message
    assert message.isprintable(), message  # no NUL, newline or lone surrogate reaches the model


def assert_nothing_ran(tree: Path, mode: str, fake_docker: Path) -> None:
    assert not (tree / "ran").exists()
    if mode == "docker":
        assert "exec" not in [argv[0] for argv in calls(fake_docker)]


LONG_NAME = "x" * 300
OVER_PATH_MAX = "/".join(["d" * 200] * 25)  # 5,024 characters


CASES: list[tuple[str, Callable[[Path], str], tuple[str, ...]]] = [
    ("nul", lambda tree: "sub\x00/evil", ("NUL",)),
    ("symlink loop", lambda tree: "loop", ("'loop'", "loop")),
    ("two-link loop", lambda tree: "ping/sub", ("'ping'", "loop")),
    ("300-character name", lambda tree: LONG_NAME, ("300 bytes", "255")),
    ("path over PATH_MAX", lambda tree: OVER_PATH_MAX, ("5,024 bytes",)),
    ("through a regular file", lambda tree: "notes.txt/sub", ("'notes.txt' is a file",)),
    ("a regular file", lambda tree: "notes.txt", ("'notes.txt' is a file",)),
    ("missing directory", lambda tree: "sub/missing/deeper", ("does not exist", "mkdir -p")),
    ("dot-dot escaping", lambda tree: "sub/../..", (CWD_ESCAPE_MESSAGE,)),
    ("symlink out", lambda tree: "out", (CWD_ESCAPE_MESSAGE, "'out'")),
    ("absolute elsewhere", lambda tree: "/etc", ("absolute", CWD_ESCAPE_MESSAGE)),
    ("absolute host path inside", lambda tree: f"{tree}/sub", ("absolute", "cwd='sub'")),
    ("absolute host root", os.fspath, ("absolute", "cwd=''")),
    ("absolute mount path", lambda tree: f"{MOUNT}/sub", ("absolute",)),
]


@pytest.mark.parametrize(("cwd_of", "words"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_a_cwd_the_os_cannot_use_is_refused_in_the_workspaces_terms(
    run: Run,
    mode: str,
    tree: Path,
    tmp_path: Path,
    fake_docker: Path,
    cwd_of: Callable[[Path], str],
    words: tuple[str, ...],
) -> None:
    message = refusal(run, cwd_of(tree))
    for word in words:
        assert word in message, message
    assert "SandboxError: cwd" in message
    assert_in_workspace_terms(message, tree, tmp_path)
    assert_nothing_ran(tree, mode, fake_docker)


@pytest.mark.parametrize("cwd", ["\udcff", "sub/\ud800"], ids=["lone surrogate", "unencodable surrogate"])
def test_a_cwd_that_is_not_text_is_refused_by_the_pipeline_before_the_sandbox(
    run: Run, mode: str, tree: Path, tmp_path: Path, fake_docker: Path, cwd: str
) -> None:
    """Every tool's arguments are checked for lone surrogates first (``core/_surrogates.py``);
    the sandbox's own check (``sandbox/_cwd.py``) guards its actor used directly."""
    message = refusal(run, cwd)
    assert message.startswith("Invalid arguments for exec_command: `cwd` holds an unpaired UTF-16 surrogate")
    assert_in_workspace_terms(message, tree, tmp_path)
    assert_nothing_ran(tree, mode, fake_docker)


def test_an_absolute_cwd_under_the_mount_is_answered_with_its_relative_form_where_commands_see_the_mount(
    run: Run, mode: str
) -> None:
    message = refusal(run, f"{MOUNT}/sub/")
    if mode == "local":  # commands see the host's paths: /workspace is elsewhere
        assert CWD_ESCAPE_MESSAGE in message
    else:
        assert "pass it relative to the workspace root: cwd='sub'." in message


def workdir(fake_docker: Path) -> str:
    """The ``-w`` of the fake docker's last ``exec``."""
    argv = [argv for argv in calls(fake_docker) if argv[0] == "exec"][-1]
    return argv[argv.index("-w") + 1]


def test_a_symlink_made_inside_the_sandbox_to_the_mount_is_followed_there(
    run: Run, mode: str, tree: Path, fake_docker: Path
) -> None:
    (tree / "alias").symlink_to(f"{MOUNT}/sub")
    if mode == "local":  # /workspace is not the workspace here
        assert CWD_ESCAPE_MESSAGE in refusal(run, "alias")
    elif mode == "bwrap":
        assert f"{MOUNT}/sub\n" in run(cmd="pwd", cwd="alias")
    else:
        run(cmd="pwd", cwd="alias")
        assert workdir(fake_docker) == f"{MOUNT}/sub"


def test_a_good_cwd_still_runs_there(run: Run, mode: str, tree: Path, fake_docker: Path) -> None:
    run(cmd=MARK, cwd="./sub//")
    if mode == "docker":  # the fake docker runs nothing
        assert workdir(fake_docker) == f"{MOUNT}/sub"
    else:
        assert (tree / "ran").exists()


ODD_PIECES = ["\x00", "\udcff", "\ud800", LONG_NAME]
PIECES = st.sampled_from(["", ".", "..", "sub", "notes.txt", "loop", "ping", "out", "missing", "-", "~", *ODD_PIECES])
NAMES = st.one_of(PIECES, st.text(max_size=12))


@st.composite
def odd_cwds(draw: st.DrawFn, tree: Path) -> str:
    relative = "/".join(draw(st.lists(NAMES, min_size=1, max_size=6)))
    prefix = draw(st.sampled_from(["", "", "/", f"{tree}/", f"{MOUNT}/", "//"]))
    return prefix + relative


def usable_by_the_os(tree: Path, cwd: str) -> bool:
    """Whether the kernel would enter ``cwd`` below ``tree`` and stay inside it (an oracle that
    accepts more than the sandbox: the sandbox refuses every absolute path and surrogate)."""
    try:
        target = os.path.join(tree, cwd)
        real = os.path.realpath(target)
        return os.path.isdir(target) and (real == str(tree) or real.startswith(f"{tree}/"))
    except (ValueError, OSError):
        return False


@settings(
    max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_no_odd_cwd_fails_the_tool_leaks_a_host_path_or_runs_the_command(
    run: Run, mode: str, tree: Path, tmp_path: Path, fake_docker: Path, data: st.DataObject
) -> None:
    cwd = data.draw(odd_cwds(tree))
    valid_text = "\x00" not in cwd and not any("\ud800" <= char <= "\udfff" for char in cwd)
    assume(not (valid_text and not cwd.startswith("/") and usable_by_the_os(tree, cwd)))
    message = refusal(run, cwd)  # a RetriableError: never ToolFailed or another exception
    assert_in_workspace_terms(message, tree, tmp_path)
    assert_nothing_ran(tree, mode, fake_docker)
