"""The openai provider against a fake ``/embeddings`` server on 127.0.0.1 (no network)."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from toolcards.vector import EmbeddingParam, EmbeddingService
from toolcards.vector._providers import EmbeddingUnavailable
from toolcards.vector._providers.openai import OpenAIProvider

KEY_ENV = "TOOLCARDS_TEST_OPENAI_KEY"
DIMS = 8


@dataclass
class FakeEmbeddings:
    """What the fake server saw, and how it should answer next."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str] = field(default_factory=list)
    fail_next: int = 0
    fail_status: int = 500
    delay_s: float = 0.0
    base_url: str = ""


def _vector_for(text: str, dims: int) -> list[float]:
    # One-hot at len(text): lets a test see which text a row belongs to.
    vector = [0.0] * dims
    vector[len(text) % dims] = 2.0
    return vector


@pytest.fixture
def fake() -> Iterator[FakeEmbeddings]:
    state = FakeEmbeddings()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            payload = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("retry-after-ms", "1")  # keeps the client's back-off short
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (the timeout test)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.auth.append(self.headers.get("Authorization", ""))
            if state.delay_s:
                time.sleep(state.delay_s)
            if self.path != "/v1/embeddings":
                self._reply(404, {"error": {"message": f"no route {self.path}"}})
                return
            if state.fail_next:
                state.fail_next -= 1
                message = "Incorrect API key provided" if state.fail_status == 401 else "server error"
                self._reply(state.fail_status, {"error": {"message": message, "type": "x", "code": None}})
                return
            dims = body.get("dimensions", DIMS)
            data = [
                {"object": "embedding", "index": i, "embedding": _vector_for(text, dims)}
                for i, text in enumerate(body["input"])
            ]
            data.reverse()  # the API does not promise order; the client must sort by index
            self._reply(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                },
            )

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.block_on_close = False  # a handler still sleeping must not hold up teardown
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-123")


def _param(fake: FakeEmbeddings, **overrides: Any) -> EmbeddingParam:
    fields: dict[str, Any] = {
        "provider": "openai",
        "model": "fake-embed",
        "base_url": fake.base_url,
        "api_key_env": KEY_ENV,
        "timeout_s": 5.0,
        "max_retries": 2,
    }
    return EmbeddingParam(**(fields | overrides))


def test_texts_go_out_in_batches_and_come_back_in_order(fake: FakeEmbeddings) -> None:
    service = EmbeddingService(_param(fake, batch_size=2))
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    vectors = service.embed(texts)
    assert vectors is not None
    assert vectors.shape == (5, DIMS)
    assert [int(np.argmax(row)) for row in vectors] == [1, 2, 3, 4, 5]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert [r["input"] for r in fake.requests] == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]
    assert {r["model"] for r in fake.requests} == {"fake-embed"}
    assert set(fake.auth) == {"Bearer sk-test-123"}
    assert service.model_id == "openai:fake-embed"


def test_dimensions_are_requested_and_empty_texts_are_sent_as_a_space(fake: FakeEmbeddings) -> None:
    provider = OpenAIProvider(_param(fake, dimensions=4))
    assert provider.embed(["", "xy"]).shape == (2, 4)
    assert fake.requests[0]["dimensions"] == 4
    assert fake.requests[0]["input"] == [" ", "xy"]
    assert provider.model_id == "openai:fake-embed:4"


def test_a_server_error_is_retried(fake: FakeEmbeddings) -> None:
    fake.fail_next = 2
    vectors = EmbeddingService(_param(fake, max_retries=2)).embed(["abc"])
    assert vectors is not None
    assert int(np.argmax(vectors[0])) == 3
    assert len(fake.requests) == 3


def test_server_errors_beyond_the_retries_make_it_unavailable(fake: FakeEmbeddings) -> None:
    fake.fail_next = 10
    with pytest.raises(EmbeddingUnavailable, match="HTTP 500"):
        OpenAIProvider(_param(fake, max_retries=1)).embed(["abc"])
    assert len(fake.requests) == 2


def test_a_rejected_key_degrades_the_service_and_warns_once(
    fake: FakeEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    fake.fail_next, fake.fail_status = 100, 401
    service = EmbeddingService(_param(fake))
    with caplog.at_level(logging.WARNING, logger="toolcards.vector._service"):
        assert service.embed(["a"]) is None
        assert service.embed(["b"]) is None
    assert not service.available
    assert len(fake.requests) == 1  # 401 is not retried, and a degraded service calls no more
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert KEY_ENV in warnings[0].getMessage()
    assert "401" in warnings[0].getMessage()


def test_a_missing_key_sends_no_request(fake: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(EmbeddingUnavailable, match=KEY_ENV):
        OpenAIProvider(_param(fake)).embed(["a"])
    assert fake.requests == []


def test_a_slow_endpoint_times_out(fake: FakeEmbeddings) -> None:
    fake.delay_s = 1.0
    with pytest.raises(EmbeddingUnavailable, match="did not answer"):
        OpenAIProvider(_param(fake, timeout_s=0.2, max_retries=0)).embed(["a"])


def test_an_unreachable_endpoint_is_unavailable() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: the connection is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    param = EmbeddingParam(
        provider="openai", base_url=f"http://127.0.0.1:{port}/v1", api_key_env=KEY_ENV, max_retries=0, timeout_s=2
    )
    with pytest.raises(EmbeddingUnavailable, match="Cannot reach"):
        OpenAIProvider(param).embed(["a"])


def test_vectors_of_the_wrong_size_are_rejected(fake: FakeEmbeddings) -> None:
    # The default model is known to answer 1536 dimensions; this server answers 8.
    with pytest.raises(EmbeddingUnavailable, match="expected 1536"):
        OpenAIProvider(_param(fake, model=None)).embed(["a"])
