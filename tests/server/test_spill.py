"""MCP clients and spilled outputs: an answer over its budget names a workspace file that every
client of the team reads through the server, in this process and from ``toolcards serve``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import make_config
from tests.server.test_app import client, run, text_of
from tests.server.test_stdio import RawServer, text
from toolcards.actors._system import ActorSystem
from toolcards.server import TeamServer

SPILLED = re.compile(r"saved whole in the workspace as '(\.toolcards/spill/[^']+)'")
NUMBERED = re.compile(r" *(\d+)\t(.*)")
ECHOED = "a line the team echoes\n"


def echoed(times: int) -> str:
    return " ".join([ECHOED] * times)


def lines_of(page: str) -> list[str]:
    return [m[2] for m in map(NUMBERED.fullmatch, page.split("\n")[1:-1]) if m]


def test_a_client_reads_what_anothers_call_spilled(system: ActorSystem, isolated_root: Path) -> None:
    server = TeamServer(make_config(cards=[{"kind": "test_echo"}, {"kind": "workspace"}]), system=system)

    async def main() -> tuple[str, list[str], str]:
        try:
            async with client(server, "Alice") as alice, client(server, "Bob") as bob:
                answer = text_of(await alice.call_tool("echo", {"text": ECHOED, "times": 3_000}))
                found = SPILLED.search(answer)
                assert found, answer[-500:]
                lines: list[str] = []
                while True:
                    page = text_of(await bob.call_tool("workspace_read", {"path": found[1], "offset": len(lines) + 1}))
                    lines += lines_of(page)
                    if "to continue)" not in page:
                        break
                searched = text_of(await bob.call_tool("workspace_grep", {"pattern": "echoes", "path": found[1]}))
                return answer, lines, searched
        finally:
            await server.aclose()

    answer, lines, searched = run(main)
    assert answer.startswith("a line the team echoes\n a line") and "Read on with workspace_read(path=" in answer
    assert "\n".join(lines) + "\n" == echoed(3_000)  # numbered lines show no final line break
    assert "(showing 100 of 3000 matching lines in 1 files;" in searched


@pytest.mark.slow
def test_toolcards_serve_spills_to_the_workspace_and_reads_it_back(tmp_path: Path, isolated_root: Path) -> None:
    config = tmp_path / "team.yaml"
    config.write_text(
        "team_id: stdio-team\nimports: [tests.server.cards]\ncards:\n  - kind: test_echo\n  - kind: workspace\n"
    )
    raw = RawServer(config)
    try:
        raw.initialize()
        answer = text(raw.call(1, "echo", text=ECHOED, times=3_000))
        found = SPILLED.search(answer)
        assert found, answer[-500:]
        page = text(raw.call(2, "workspace_read", path=found[1], offset=2_999))
        assert lines_of(page) == [" a line the team echoes"] * 2
    finally:
        assert raw.close() == 0
    spilled: Any = isolated_root / "stdio-team" / found[1]
    assert spilled.read_text() == echoed(3_000)
