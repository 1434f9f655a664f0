"""``toolcards serve --roots``: the client's first root directory is its agent's workspace,
read-only unless ``writable``, and a change of roots moves the agent to the new one. Real
``toolcards serve`` processes over stdio, the SDK's client giving its roots; and the SDK server
in-process."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from tests.server.test_stdio import REPO, stdio_params
from toolcards.actors._system import ActorSystem
from toolcards.errors import RetriableError
from toolcards.fs._locations import mount_workspace
from toolcards.server import ServeConfig, TeamServer
from toolcards.server._roots import first_local_root

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

CONFIG = "team_id: roots-team\ncards:\n  - kind: workspace\n  - kind: exec\n    mode: local\n    allowed_commands: []\n"
INFO = types.Implementation(name="Rooted", version="1")


def roots_of(*directories: Path) -> Any:
    current = list(directories)

    async def callback(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=path.as_uri(), name=path.name) for path in current])

    callback.current = current  # type: ignore[attr-defined]
    return callback


def text_of(result: types.CallToolResult) -> str:
    part = result.content[0]
    assert isinstance(part, types.TextContent)
    return part.text


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLCARDS_WORKSPACES_ROOT", str(tmp_path / "workspaces"))
    monkeypatch.setenv("TOOLCARDS_STORE", str(tmp_path / "state.db"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO / "src"), str(REPO)]))  # the code under test first
    config = tmp_path / "team.yaml"
    config.write_text(CONFIG)
    return config


def project(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.mkdir()
    (path / "notes.md").write_text(text)
    return path


@pytest.mark.slow
def test_a_read_only_root_is_read_and_never_written(team: Path, tmp_path: Path) -> None:
    first = project(tmp_path, "first", "from the first root\n")
    second = project(tmp_path, "second", "from the second root\n")
    roots = roots_of(first)

    async def main() -> tuple[list[str], str, str]:
        params = stdio_params(team, "--roots")
        async with Client(stdio_client(params), mode="legacy", client_info=INFO, list_roots_callback=roots) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            before = text_of(await client.call_tool("workspace_read", {"path": "notes.md"}))
            roots.current[:] = [second]
            await client.send_roots_list_changed()
            await asyncio.sleep(1.0)  # the server asks for them again
            after = text_of(await client.call_tool("workspace_read", {"path": "notes.md"}))
            return names, before, after

    names, before, after = asyncio.run(main())
    assert "workspace_read" in names and "workspace_write" not in names and "exec_command" not in names
    assert "from the first root" in before and "from the second root" in after
    assert sorted(p.name for p in first.iterdir()) == ["notes.md"]


@pytest.mark.slow
def test_a_writable_root_takes_the_writes_and_commands(team: Path, tmp_path: Path) -> None:
    root = project(tmp_path, "project", "hello\n")

    async def main() -> str:
        params = stdio_params(team, "--roots", "writable")
        client = Client(stdio_client(params), mode="legacy", client_info=INFO, list_roots_callback=roots_of(root))
        async with client:
            written = await client.call_tool("workspace_write", {"path": "made.txt", "content": "by the agent"})
            assert not written.is_error, text_of(written)
            return text_of(await client.call_tool("exec_command", {"cmd": "cat made.txt"}))

    assert "by the agent" in asyncio.run(main())
    assert (root / "made.txt").read_text() == "by the agent"
    assert not (tmp_path / "workspaces" / "roots-team" / "made.txt").exists()


def test_the_sdk_server_uses_the_roots_of_each_connection(system: ActorSystem, tmp_path: Path) -> None:
    root = project(tmp_path, "mine", "mine\n")
    server = TeamServer(
        ServeConfig(team_id="roots-team", cards=[{"kind": "workspace"}], roots="read-only"), system=system
    )
    try:

        async def main() -> tuple[str, list[str]]:
            client = Client(server.server, mode="legacy", client_info=INFO, list_roots_callback=roots_of(root))
            async with client:
                read = text_of(await client.call_tool("workspace_read", {"path": "notes.md"}))
                return read, [tool.name for tool in (await client.list_tools()).tools]

        read, names = asyncio.run(main())
    finally:
        server.close()
    assert "mine" in read and "workspace_write" not in names


def test_without_roots_the_configured_tree_is_used(system: ActorSystem, tmp_path: Path) -> None:
    server = TeamServer(
        ServeConfig(team_id="roots-team", cards=[{"kind": "workspace"}], roots="read-only"), system=system
    )
    try:

        async def main() -> list[str]:
            async with Client(server.server, mode="legacy", client_info=INFO) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

        assert "workspace_write" in asyncio.run(main())
    finally:
        server.close()


def test_which_roots_count(tmp_path: Path) -> None:
    here = project(tmp_path, "here", "x")
    roots = {
        "roots": [
            {"uri": "https://example.com/repo"},
            {"uri": (tmp_path / "missing").as_uri()},
            {"uri": here.as_uri(), "name": "Here"},
        ]
    }
    assert first_local_root(roots) == (here, "Here")
    assert first_local_root({"roots": []}) is None
    mounted = mount_workspace(here, label="Here")
    assert mounted.startswith("root-Here-") and mount_workspace(here, label="Here") == mounted
    with pytest.raises(RetriableError, match="toolcards' own files"):
        mount_workspace(tmp_path / "workspaces")


@pytest.mark.parametrize(
    ("directory", "why"),
    [
        ("/", "the file system's root"),
        ("/etc", "a top-level directory"),
        ("/etc/ssl", "a system directory"),
        ("/usr/lib", "a system directory"),
        ("~", "a home directory"),
        ("~/.config/toolcards-probe", "a home directory's settings"),
    ],
)
def test_a_root_the_system_or_the_user_depends_on_is_never_mounted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, directory: str, why: str
) -> None:
    # Mounted, a tree is journaled whole into the store and, writable, changed by commands.
    home = tmp_path / "home" / "someone"
    (home / ".config" / "toolcards-probe").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    path = Path(directory.replace("~", str(home), 1))
    if not path.is_dir():
        pytest.skip(f"{path} does not exist here")
    with pytest.raises(RetriableError, match=f"is {why}: a workspace given from outside must be a project"):
        mount_workspace(path)


def test_a_project_inside_a_home_is_mounted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home" / "someone"
    (home / "src" / "app").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    assert mount_workspace(home / "src" / "app").startswith("root-app-")
