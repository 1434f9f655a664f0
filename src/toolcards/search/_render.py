"""Turn Tavily responses into compact text a model reads.

:func:`parse_search`, :func:`parse_pages` and :func:`parse_failures` read the JSON
bodies of Tavily's ``/search``, ``/extract`` and ``/crawl`` endpoints into
:class:`WebPage` values and raise :class:`ValueError` when a body does not have the
documented shape. :func:`render_search`, :func:`render_fetch` and
:func:`render_crawl` lay those pages out as numbered plain text, each piece of outside
text capped by :func:`clip`, which says how much it cut.

Rendering only lays text out: wrapping the result as untrusted outside content is the
tool pipeline's job. Nothing here blocks or touches the network.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FetchFailure",
    "WebPage",
    "clip",
    "parse_failures",
    "parse_pages",
    "parse_search",
    "render_crawl",
    "render_fetch",
    "render_search",
]

_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")
_SPACE_RUNS = re.compile(r"\s+")


@dataclass(frozen=True, kw_only=True)
class WebPage:
    """One page of outside text: a search hit, an extracted page or a crawled page."""

    url: str
    """The page's address, as Tavily reported it."""
    title: str = ""
    """The page title; empty for extracted and crawled pages, which Tavily does not title."""
    text: str = ""
    """The snippet (search) or the page's extracted text (extract, crawl), uncut."""


@dataclass(frozen=True, kw_only=True)
class FetchFailure:
    """A URL Tavily could not extract, with its reason."""

    url: str
    """The URL that failed."""
    error: str
    """Tavily's reason, or ``"unknown error"``."""


def clip(text: str, limit: int) -> str:
    """Return ``text`` cut to at most about ``limit`` characters, saying how much was cut.

    The cut falls on the last whitespace before ``limit`` when there is one close by, so
    words stay whole. A cut text ends with ``" … [N more characters cut]"``; text within
    the limit is returned unchanged.
    """
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    if cut < limit * 0.8:
        cut = limit
    return f"{text[:cut].rstrip()} … [{len(text) - cut:,} more characters cut]"


def _as_text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _results(body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, dict):
        raise ValueError(f"expected a JSON object, got {type(body).__name__}")
    results = body.get("results", [])
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise ValueError("'results' is not a list of objects")
    return results


def parse_search(body: Any) -> list[WebPage]:
    """Read a ``/search`` response body into pages (title, url, snippet).

    Results without a URL are dropped. Raises :class:`ValueError` when ``body`` is not
    an object whose ``results`` is a list of objects.
    """
    return [
        WebPage(url=_as_text(r.get("url")), title=_as_text(r.get("title")), text=_as_text(r.get("content")))
        for r in _results(body)
        if _as_text(r.get("url"))
    ]


def parse_pages(body: Any) -> list[WebPage]:
    """Read an ``/extract`` or ``/crawl`` response body into pages (url, extracted text).

    Results without a URL are dropped. Raises :class:`ValueError` when ``body`` is not
    an object whose ``results`` is a list of objects.
    """
    return [
        WebPage(url=_as_text(r.get("url")), text=_as_text(r.get("raw_content")))
        for r in _results(body)
        if _as_text(r.get("url"))
    ]


def parse_failures(body: Any) -> list[FetchFailure]:
    """Read the ``failed_results`` of an ``/extract`` response body (absent means none).

    Raises :class:`ValueError` when ``body`` is not an object or ``failed_results`` is
    not a list.
    """
    if not isinstance(body, dict):
        raise ValueError(f"expected a JSON object, got {type(body).__name__}")
    failed = body.get("failed_results") or []
    if not isinstance(failed, list):
        raise ValueError("'failed_results' is not a list")
    return [
        FetchFailure(url=_as_text(f.get("url")) or "?", error=_as_text(f.get("error")) or "unknown error")
        if isinstance(f, dict)
        else FetchFailure(url=_as_text(f) or "?", error="unknown error")
        for f in failed
    ]


def _page_text(text: str, limit: int) -> str:
    return clip(_BLANK_RUNS.sub("\n\n", text), limit)


def render_search(query: str, pages: Sequence[WebPage], *, max_snippet_chars: int) -> str:
    """Lay out search hits as a numbered list: title, URL, then the snippet on one line.

    Snippets have their whitespace collapsed and are capped at ``max_snippet_chars``.
    No hits gives one sentence suggesting a broader query.
    """
    if not pages:
        return f'No web results for "{query}". Try broader or different words.'
    lines = [f'Web results for "{query}" ({len(pages)}):']
    for number, page in enumerate(pages, start=1):
        lines.append(f"{number}. {page.title or '(untitled)'}")
        lines.append(f"   {page.url}")
        snippet = _SPACE_RUNS.sub(" ", page.text).strip()
        if snippet:
            lines.append(f"   {clip(snippet, max_snippet_chars)}")
    return "\n".join(lines)


def render_fetch(pages: Sequence[WebPage], failures: Sequence[FetchFailure], *, max_chars: int) -> str:
    """Lay out extracted pages, each under a ``[n] URL`` header, then the URLs that failed.

    Each page's text is capped at ``max_chars`` (runs of blank lines are squeezed first).
    """
    blocks = [
        f"[{number}] {page.url}\n{_page_text(page.text, max_chars) or '(no text extracted)'}"
        for number, page in enumerate(pages, start=1)
    ]
    if failures:
        failed = "\n".join(f"- {failure.url}: {failure.error}" for failure in failures)
        blocks.append(f"Could not fetch {len(failures)} URL(s):\n{failed}")
    if not blocks:
        return "No text could be extracted from the given URLs."
    return "\n\n".join(blocks)


def render_crawl(base_url: str, pages: Sequence[WebPage], *, max_chars: int) -> str:
    """Lay out crawled pages under a one-line summary, each page capped at ``max_chars``."""
    if not pages:
        return f"The crawl of {base_url} returned no pages. Check the URL or loosen the instructions."
    blocks = [f"Crawled {len(pages)} page(s) from {base_url}:"]
    blocks += [
        f"[{number}] {page.url}\n{_page_text(page.text, max_chars) or '(no text extracted)'}"
        for number, page in enumerate(pages, start=1)
    ]
    return "\n\n".join(blocks)
