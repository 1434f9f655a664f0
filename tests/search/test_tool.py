"""SearchTool through the factory: defaults from params, the envelope, no key, round trip."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import responses

from tests.search.test_client import SEARCH_BODY
from toolcards import RetriableError, ToolFactory, dump_cards, load_cards
from toolcards.search._client import TavilySettings
from toolcards.search._tool import SearchTool, WebFetchParam, WebSearchParam

API = "https://api.tavily.com"


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def test_results_are_enveloped_and_param_defaults_apply(
    rsps: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    rsps.post(f"{API}/search", json=SEARCH_BODY)
    factory = ToolFactory([SearchTool(web_search=WebSearchParam(max_results=3, search_depth="advanced"))])
    out = factory.command_registry().dispatch('/web_search "pykka actors"')
    assert out.startswith("[BEGIN UNTRUSTED ")
    assert "https://pykka.readthedocs.io/" in out
    body = json.loads(rsps.calls[0].request.body or "{}")
    assert (body["max_results"], body["search_depth"]) == (3, "advanced")


def test_without_a_key_every_call_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    factory = ToolFactory([SearchTool(web_crawl=True)])
    for tool in factory.tools():
        args = {"query": "x"} if tool.name == "web_search" else {"urls": ["https://a.b"]}
        if tool.name == "web_crawl":
            args = {"url": "https://a.b"}
        assert "TAVILY_API_KEY is not set" in tool.call_sync(args)


def test_bad_input_is_retriable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    commands = ToolFactory([SearchTool(web_fetch=WebFetchParam(expose={"command"}))]).get_commands()  # type: ignore[arg-type]
    with pytest.raises(RetriableError):
        commands[WebFetchParam](urls=["ftp://nope"])


def test_round_trip_and_default_channels() -> None:
    card = SearchTool(settings=TavilySettings(max_results=4, exclude_domains=["example.com"]), web_crawl=True)
    assert load_cards(json.loads(json.dumps(dump_cards([card])))) == [card]
    names = sorted(t.name for t in ToolFactory([SearchTool()]).tools())
    assert names == ["web_fetch", "web_search"]
