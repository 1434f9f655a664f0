"""Strings that are not text (a lone UTF-16 surrogate: JSON's ``"\\ud800"``, or the CESU-8 bytes
``ED A0 80``) sent to a real ``toolcards serve`` over stdio by a raw client: a tool's argument
is the tool's refusal naming it, any other field a JSON-RPC error, never ``-32603`` nor a
traceback; an answer holding one still goes out; the SDK's HTTP server refuses such a frame as
not JSON."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.test_stdio import INIT, RawServer, text
from toolcards.actors._system import ActorSystem
from toolcards.server import ServeConfig, TeamServer

pytestmark = pytest.mark.slow

REFUSAL = "holds an unpaired UTF-16 surrogate"


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    folder = tmp_path / "skills" / "changelog"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: changelog\ndescription: Write a changelog entry.\n---\nFollow format.md.\n"
    )
    (folder / "format.md").write_text("Added, Changed, Fixed.\n")
    # A file name that is not UTF-8: Python names it with a lone surrogate (\udcff).
    with open(bytes(folder) + b"/odd\xff.md", "wb") as odd:
        odd.write(b"odd\n")
    return folder.parent


@pytest.fixture
def served(tmp_path: Path, skills: Path) -> Iterator[RawServer]:
    config = tmp_path / "team.yaml"
    config.write_text(
        "team_id: not-text\ncards:\n"
        "  - kind: workspace\n"
        "  - kind: planning\n"
        f"  - kind: skills\n    paths: [{json.dumps(str(skills))}]\n"
        "  - kind: metadata\n    set_metadata:\n      expose: [tool_call]\n"
        "  - kind: usage\n"
    )
    server = RawServer(config)
    try:
        server.initialize()
        yield server
    finally:
        server.kill()


TOOL_ARGUMENTS = [
    ("usage", '{"member":"@x\\ud800"}', "`member` holds an unpaired UTF-16 surrogate (\\ud800 at position 2)"),
    ("set_metadata", '{"text":"notes \\ud800"}', "`text` holds"),
    ("read_skill_file", '{"name":"changelog","path":"\\ud800"}', "`path` holds"),
    ("workspace_read", '{"path":"notes\\udc80.md"}', "`path` holds"),
    ("update_planning", '{"create_tasks":[{"description":"ok"},{"description":"\\udfff"}]}',
     "`create_tasks[1].description` holds"),
    ("usage", b'{"member":"@\xed\xa0\x80"}'.decode("utf-8", "surrogateescape"), "`member` holds"),  # CESU-8
]  # fmt: skip

REQUEST_FIELDS = [
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/li\\ud800st"}', -32600, "`method` holds"),
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"us\\ud800age","arguments":{}}}',
     -32602, "`params.name` holds"),
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"usage","arguments":{},'
     b'"_meta":{"progressToken":"\\ud800"}}}', -32602, "`params._meta.progressToken` holds"),
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"usage","arguments":{},'
     b'"_meta":{"\\ud800":1}}}', -32602, "a key of `params._meta` holds"),
    (b'{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"toolcards://not-text/\\ud800"}}',
     -32602, "`params.uri` holds"),
    (b'{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"x","arguments":{"a":"\\ud800"}}}',
     -32602, "`params.arguments.a` holds"),
    (b'{"jsonrpc":"2.0","id":7,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"x"},'
     b'"argument":{"name":"a","value":"\\ud800"}}}', -32602, "`params.argument.value` holds"),
    (b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', -32600, "`id` holds"),
    (b'{"jsonrpc":"2.0","method":"notifications/\\ud800"}', -32600, "`method` holds"),
]  # fmt: skip


def test_each_tool_refuses_an_argument_that_is_not_text_naming_it(served: RawServer) -> None:
    for request_id, (tool, arguments, where) in enumerate(TOOL_ARGUMENTS, start=1):
        frame = (
            f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
            f'"params":{{"name":"{tool}","arguments":{arguments}}}}}'
        )
        served.send(frame.encode("utf-8", "surrogateescape"))
        answer = served.receive()

        assert "error" not in answer, answer  # a result the model reads, never -32603
        assert answer["result"]["isError"] is True
        message = text(answer)
        assert message.startswith(f"Invalid arguments for {tool}: ") and where in message, message
        assert message.endswith("which is not text, so nothing was done. Send the text as UTF-8.")
    # An answer holding one still goes out: use_skill lists a file whose name is not UTF-8.
    listed = served.call(100, "use_skill", name="changelog")
    assert "odd\\udcff.md" in text(listed)  # the surrogate as text, where the name is
    assert served.close() == 0
    stderr = b"".join(served.stderr).decode()
    assert "Traceback" not in stderr and "event log" not in stderr, stderr


def test_the_calls_around_a_refused_one_are_done_and_logged(served: RawServer, isolated_root: Path) -> None:
    served.send(
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"update_planning",'
        b'"arguments":{"create_tasks":[{"description":"bad \\ud800"}]}}}'
    )
    served.send(
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"usage","arguments":{"member":"\\udc00"}}}'
    )
    for index in range(3):  # in the same event batch (50 ms) as the refused calls
        served.request(
            10 + index,
            "tools/call",
            {"name": "update_planning", "arguments": {"create_tasks": [{"description": f"valid task {index}"}]}},
        )
    answers = {answer["id"]: answer for answer in (served.receive() for _ in range(5))}

    assert all(answers[i]["result"]["isError"] and REFUSAL in text(answers[i]) for i in (1, 2))
    assert sorted(text(answers[10 + i]) for i in range(3)) == ["Created task 1.", "Created task 2.", "Created task 3."]
    time.sleep(0.3)  # the event batch is written within 50 ms
    assert served.close() == 0
    (database,) = isolated_root.glob("**/state.db")
    with sqlite3.connect(database) as db:
        log = " ".join(value for (value,) in db.execute("select value from records where namespace like '%#events'"))
    assert all(f"created task {n}" in log for n in (1, 2, 3))
    assert "bad" not in log  # nothing was done
    stderr = b"".join(served.stderr).decode()
    assert "Traceback" not in stderr and "event log" not in stderr, stderr


def test_a_request_field_that_is_not_text_is_a_json_rpc_error(served: RawServer) -> None:
    for frame, code, data in REQUEST_FIELDS:
        served.send(frame)
        answer = served.receive()

        assert answer["error"]["code"] == code, answer
        assert answer["id"] == (7 if b'"id":7' in frame else None)  # an id that is not text is not sent back
        assert answer["error"]["data"].startswith(data), answer
        assert answer["error"]["data"].endswith("which is not text: send the text as UTF-8")
    assert served.answer(8, "ping") == {"jsonrpc": "2.0", "id": 8, "result": {}}
    assert served.close() == 0
    assert "Traceback" not in b"".join(served.stderr).decode()


def test_the_http_server_refuses_such_a_frame_as_not_json(system: ActorSystem) -> None:
    """The SDK parses a frame with pydantic-core, which refuses a lone surrogate: ``-32700`` for
    the whole frame, and the team serves on."""
    import urllib.error
    import urllib.request

    from tests.serving import serving_in_thread
    from toolcards.server._http import serve_http

    cards = [{"kind": "metadata", "set_metadata": {"expose": ["tool_call"]}}]
    team = TeamServer(ServeConfig(team_id="not-text", cards=cards), system=system)

    def post(url: str, body: bytes, session: str | None = None) -> tuple[int, dict[str, str], bytes]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if session:
            headers["mcp-session-id"] = session
        request = urllib.request.Request(url, data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, {}, exc.read()

    try:
        with serving_in_thread(
            lambda stop, ready: serve_http(team, port=0, stop=stop, on_ready=ready, no_token=True), what="the server"
        ) as url:
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}
            status, headers, _ = post(url, json.dumps(initialize).encode())
            session = headers["mcp-session-id"]
            post(url, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', session)
            body = (
                b'{"jsonrpc":"2.0","id":2,"method":"tools/call",'
                b'"params":{"name":"set_metadata","arguments":{"text":"\\ud800"}}}'
            )
            refused = post(url, body, session)
            fine = post(url, b'{"jsonrpc":"2.0","id":3,"method":"ping"}', session)
    finally:
        team.close()

    assert status == 200
    assert refused[0] == 400 and json.loads(refused[2])["error"]["code"] == -32700
    assert fine[0] == 200 and b'"id":3' in fine[2]
