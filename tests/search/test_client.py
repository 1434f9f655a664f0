"""WebSearch against a mocked Tavily HTTP API (the `responses` library; no network)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import responses

from toolcards.errors import RetriableError, ToolFailed, ToolTimeout
from toolcards.search import TavilySettings, WebSearch

API = "https://api.tavily.com"


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    # Unmatched requests raise ConnectionError inside the mock, so nothing reaches the network.
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-key")
    return "tvly-test-key"


def sent(mock: responses.RequestsMock, index: int = -1) -> dict[str, Any]:
    body = mock.calls[index].request.body
    assert isinstance(body, (str, bytes))
    return dict(json.loads(body))


SEARCH_BODY = {
    "query": "pykka actors",
    "answer": None,
    "images": [],
    "results": [
        {
            "title": "Pykka documentation",
            "url": "https://pykka.readthedocs.io/",
            "content": "Pykka is a Python implementation\n of the actor model.",
            "score": 0.91,
            "raw_content": None,
        },
        {"title": "", "url": "https://example.org/x", "content": "x" * 2000, "score": 0.5},
        {"title": "no url", "content": "dropped"},
    ],
    "response_time": 1.1,
}


def test_search_renders_titles_urls_and_capped_snippets(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post(f"{API}/search", json=SEARCH_BODY)
    out = WebSearch(TavilySettings(max_snippet_chars=100)).search("pykka actors", max_results=3)

    assert out.splitlines()[0] == 'Web results for "pykka actors" (2):'
    assert "1. Pykka documentation\n   https://pykka.readthedocs.io/\n   Pykka is a Python implementation of" in out
    assert "2. (untitled)\n   https://example.org/x" in out
    assert "[1,900 more characters cut]" in out
    assert "dropped" not in out
    assert rsps.calls[0].request.headers["Authorization"] == f"Bearer {key}"
    body = sent(rsps)
    assert body["query"] == "pykka actors"
    assert body["max_results"] == 3
    assert body["search_depth"] == "basic"


def test_search_lowers_max_results_to_the_cap_and_sends_domain_filters(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post(f"{API}/search", json={"results": []})
    settings = TavilySettings(max_results=4, include_domains=["Docs.Python.org"], exclude_domains=["spam.com"])
    out = WebSearch(settings).search("asyncio", max_results=50, search_depth="advanced")

    assert out == 'No web results for "asyncio". Try broader or different words.'
    body = sent(rsps)
    assert body["max_results"] == 4
    assert body["search_depth"] == "advanced"
    assert body["include_domains"] == ["docs.python.org"]
    assert body["exclude_domains"] == ["spam.com"]


def test_api_base_url_override_is_used(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post("http://proxy.local:8080/search", json={"results": []})
    WebSearch(TavilySettings(api_base_url="http://proxy.local:8080")).search("q")
    assert rsps.calls[0].request.url == "http://proxy.local:8080/search"


@pytest.mark.parametrize("operation", ["search", "fetch", "crawl"])
def test_missing_key_gives_one_sentence_and_no_request(
    rsps: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    web = WebSearch()
    out = {
        "search": lambda: web.search("q"),
        "fetch": lambda: web.fetch(["https://example.com"]),
        "crawl": lambda: web.crawl("https://example.com"),
    }[operation]()

    assert out.endswith("is unavailable: TAVILY_API_KEY is not set. Continue without web results.")
    assert out.count(".") == 2  # one sentence plus the advice
    assert len(rsps.calls) == 0


def test_custom_key_variable_and_blank_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_TAVILY", "   ")
    out = WebSearch(TavilySettings(api_key_env="MY_TAVILY")).search("q")
    assert out == "Web search is unavailable: MY_TAVILY is not set. Continue without web results."


def test_missing_package_gives_one_sentence(monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    monkeypatch.setitem(sys.modules, "tavily", None)
    out = WebSearch().search("q")
    assert out.startswith("Web search is unavailable: the tavily-python package is not installed")


@pytest.mark.parametrize(
    ("status", "error", "words"),
    [
        (401, ToolFailed, "rejected the API key in TAVILY_API_KEY"),
        (403, ToolFailed, "refused the request"),
        (432, ToolFailed, "plan limit"),
        (400, ToolFailed, "HTTP 400: Query is invalid"),
        (404, ToolFailed, "HTTP 404"),
        (429, RetriableError, "Retry in a minute"),
        (500, RetriableError, "server error (HTTP 500). Retry later."),
        (503, RetriableError, "HTTP 503"),
    ],
)
def test_http_errors_map_to_toolcards_errors(
    rsps: responses.RequestsMock, key: str, status: int, error: type[Exception], words: str
) -> None:
    rsps.post(f"{API}/search", json={"detail": {"error": "Query is invalid"}}, status=status)
    with pytest.raises(error) as info:
        WebSearch().search("q")
    assert words in str(info.value)
    assert str(info.value).startswith("Web search failed: ")
    if error is ToolFailed:
        assert not isinstance(info.value, RetriableError)


def test_timeout_is_a_tool_timeout(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post(f"{API}/search", body=requests.Timeout("read timed out"))
    with pytest.raises(ToolTimeout, match="did not answer in time"):
        WebSearch().search("q")


def test_connection_error_is_retriable(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post(f"{API}/extract", body=requests.ConnectionError("connection refused"))
    with pytest.raises(RetriableError, match=r"Web page fetching failed: could not reach Tavily \(ConnectionError\)"):
        WebSearch().fetch(["https://example.com"])


def test_malformed_json_is_retriable(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post(f"{API}/search", body="<html>gateway</html>", status=200)
    with pytest.raises(RetriableError, match="not valid JSON"):
        WebSearch().search("q")


@pytest.mark.parametrize("payload", [[1, 2], {"results": "nope"}, {"results": [1]}])
def test_wrongly_shaped_json_is_retriable(rsps: responses.RequestsMock, key: str, payload: object) -> None:
    rsps.post(f"{API}/search", json=payload)
    with pytest.raises(RetriableError, match="unexpected response"):
        WebSearch().search("q")


def test_unexpected_success_status_is_retriable(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post(f"{API}/search", json={"results": []}, status=202)
    with pytest.raises(RetriableError, match="unexpected response"):
        WebSearch().search("q")


@pytest.mark.parametrize(
    ("query", "kwargs", "words"),
    [
        ("   ", {}, "query is empty"),
        ("x" * 401, {}, "limit is 400"),
        ("q", {"max_results": 0}, "max_results is 0"),
        ("q", {"search_depth": "deep"}, "'deep' is not known"),
    ],
)
def test_search_rejects_bad_arguments_before_any_request(
    rsps: responses.RequestsMock, key: str, query: str, kwargs: dict[str, Any], words: str
) -> None:
    with pytest.raises(RetriableError, match=words):
        WebSearch().search(query, **kwargs)
    assert len(rsps.calls) == 0


EXTRACT_BODY = {
    "results": [
        {"url": "https://example.com/a", "raw_content": "# A\n\n\n\n\nBody of A", "images": []},
        {"url": "https://example.com/b", "raw_content": "word " * 2000},
    ],
    "failed_results": [{"url": "https://example.com/c", "error": "Failed to fetch url"}],
    "response_time": 0.4,
}


def test_fetch_renders_pages_capped_and_lists_failures(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post(f"{API}/extract", json=EXTRACT_BODY)
    urls = [
        "https://example.com/a",
        "https://example.com/b",
        "https://example.com/c",
        "https://example.com/a",
    ]
    out = WebSearch(TavilySettings(max_chars=500)).fetch(urls)

    assert out.startswith("[1] https://example.com/a\n# A\n\nBody of A\n\n[2] https://example.com/b\nword word")
    assert "more characters cut]" in out
    assert out.endswith("Could not fetch 1 URL(s):\n- https://example.com/c: Failed to fetch url")
    body = sent(rsps)
    assert body["urls"] == ["https://example.com/a", "https://example.com/b", "https://example.com/c"]
    assert "query" not in body


def test_fetch_with_query_asks_for_relevant_chunks(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post(f"{API}/extract", json={"results": [], "failed_results": []})
    out = WebSearch().fetch(["https://example.com"], query="pricing")
    assert out == "No text could be extracted from the given URLs."
    body = sent(rsps)
    assert body["query"] == "pricing"
    assert body["chunks_per_source"] == 3


@pytest.mark.parametrize(
    ("urls", "words"),
    [
        ([], "No URL given"),
        (["ftp://example.com/file"], "'ftp://example.com/file' is not an http(s) URL"),
        (["example.com"], "'example.com' is not an http(s) URL"),
        ([f"https://example.com/{i}" for i in range(6)], "6 URLs given; at most 5"),
        (["https://ads.spam.com/x"], "is on an excluded domain (ads.spam.com)"),
        (["https://other.org/"], "outside the allowed domains (example.com, spam.com)"),
    ],
)
def test_fetch_rejects_bad_urls_before_any_request(
    rsps: responses.RequestsMock, key: str, urls: list[str], words: str
) -> None:
    settings = TavilySettings(include_domains=["example.com", "spam.com"], exclude_domains=["spam.com"])
    with pytest.raises(RetriableError) as info:
        WebSearch(settings).fetch(urls)
    assert words in str(info.value)
    assert len(rsps.calls) == 0


def test_fetch_allows_subdomains_of_included_domains(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post(f"{API}/extract", json={"results": [{"url": "https://docs.example.com/", "raw_content": "ok"}]})
    out = WebSearch(TavilySettings(include_domains=["example.com"])).fetch(["https://docs.example.com/"])
    assert out == "[1] https://docs.example.com/\nok"


def test_crawl_renders_pages_and_stays_on_site(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post(
        f"{API}/crawl",
        json={
            "base_url": "https://docs.example.com",
            "results": [
                {"url": "https://docs.example.com/start", "raw_content": "Getting started"},
                {"url": "https://docs.example.com/api", "raw_content": ""},
            ],
            "response_time": 3.2,
        },
    )
    settings = TavilySettings(crawl_limit=7, crawl_max_depth=2, exclude_domains=["cdn.example.com"])
    out = WebSearch(settings).crawl("https://docs.example.com", instructions="  the API reference ")

    assert out == (
        "Crawled 2 page(s) from https://docs.example.com:\n\n"
        "[1] https://docs.example.com/start\nGetting started\n\n"
        "[2] https://docs.example.com/api\n(no text extracted)"
    )
    body = sent(rsps)
    assert body["url"] == "https://docs.example.com"
    assert body["instructions"] == "the API reference"
    assert body["limit"] == 7
    assert body["max_depth"] == 2
    assert body["allow_external"] is False
    assert body["exclude_domains"] == [r"^(.+\.)?cdn\.example\.com$"]


def test_crawl_without_pages_and_with_bad_url(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post(f"{API}/crawl", json={"results": []})
    assert "returned no pages" in WebSearch().crawl("https://example.com")
    with pytest.raises(RetriableError, match="not an http"):
        WebSearch().crawl("file:///etc/passwd")


def test_crawl_rate_limit_is_retriable(rsps: responses.RequestsMock, key: str) -> None:
    rsps.post(f"{API}/crawl", json={"detail": {"error": "Too many requests"}}, status=429)
    with pytest.raises(RetriableError, match=r"Web crawling failed: .*429: Too many requests"):
        WebSearch().crawl("https://example.com")


def test_settings_round_trip_through_json() -> None:
    settings = TavilySettings(max_results=3, include_domains=["a.org"], api_base_url="http://x")
    assert TavilySettings.model_validate_json(settings.model_dump_json()) == settings
    with pytest.raises(ValueError):
        TavilySettings(timeout_s=0)
    with pytest.raises(ValueError):
        TavilySettings.model_validate({"api_key": "secret"})  # secrets are never config


def test_importing_search_does_not_import_tavily() -> None:
    code = "import sys, toolcards.search; print('tavily' in sys.modules, 'requests' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
