"""Parsing and laying out Tavily responses."""

from __future__ import annotations

import pytest

from toolcards.search._render import (
    FetchFailure,
    WebPage,
    clip,
    parse_failures,
    parse_pages,
    parse_search,
    render_fetch,
    render_search,
)


def test_clip_keeps_short_text_and_says_what_it_cut() -> None:
    assert clip("short", 10) == "short"
    text = "alpha beta gamma delta epsilon"
    out = clip(text, 17)
    assert out == "alpha beta gamma … [14 more characters cut]"
    assert out.startswith(text[:16])


def test_clip_cuts_inside_a_long_word_rather_than_losing_most_of_the_text() -> None:
    out = clip("a " + "x" * 100, 50)
    assert out.startswith("a " + "x" * 48)
    assert out.endswith("[52 more characters cut]")


def test_parsers_tolerate_missing_fields_and_reject_bad_shapes() -> None:
    assert parse_search({}) == []
    assert parse_search({"results": [{"url": " https://a ", "title": None}]}) == [WebPage(url="https://a")]
    assert parse_pages({"results": [{"url": "https://b", "raw_content": None}]}) == [WebPage(url="https://b")]
    assert parse_failures({"failed_results": ["https://c", {"url": "https://d"}]}) == [
        FetchFailure(url="https://c", error="unknown error"),
        FetchFailure(url="https://d", error="unknown error"),
    ]
    bad_bodies: list[object] = [None, "text", {"results": {}}, {"results": ["x"]}]
    for bad in bad_bodies:
        with pytest.raises(ValueError):
            parse_search(bad)
    with pytest.raises(ValueError):
        parse_failures({"failed_results": "x"})


def test_render_search_collapses_snippet_whitespace() -> None:
    out = render_search("q", [WebPage(url="https://a", title="A", text="one\n\n  two\tthree")], max_snippet_chars=99)
    assert out == 'Web results for "q" (1):\n1. A\n   https://a\n   one two three'


def test_render_fetch_only_failures() -> None:
    out = render_fetch([], [FetchFailure(url="https://x", error="404")], max_chars=300)
    assert out == "Could not fetch 1 URL(s):\n- https://x: 404"
