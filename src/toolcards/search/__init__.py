"""Web search for agents, through Tavily: search, fetch (extract) and crawl.

:class:`WebSearch` runs the operations with a :class:`TavilySettings` and returns
compact text; :mod:`toolcards.search._render` parses and lays out Tavily's responses.
Importing this package does not import ``tavily`` (the ``search`` extra), which is
loaded at the first call.
"""

from __future__ import annotations

from toolcards.search._client import SearchDepth, TavilySettings, WebSearch
from toolcards.search._render import FetchFailure, WebPage
from toolcards.search._tool import SearchTool, WebCrawlParam, WebFetchParam, WebSearchParam

__all__ = [
    "FetchFailure",
    "SearchDepth",
    "SearchTool",
    "TavilySettings",
    "WebCrawlParam",
    "WebFetchParam",
    "WebPage",
    "WebSearch",
    "WebSearchParam",
]
