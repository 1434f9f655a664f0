"""``SearchTool``: web search, page fetching and crawling for agents (Tavily, extra ``search``).

Channels: the three tools are TOOL_CALL by default (``web_search`` also COMMAND). Every
result is outside data and reaches the model inside the untrusted-output envelope: web
content is the first place prompt injection comes from. Without ``TAVILY_API_KEY`` the card
still binds, and each call answers one sentence saying search is unavailable and why.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, PrivateAttr

from toolcards.core._card import ToolCard, capability
from toolcards.core._channels import COMMAND, TOOL_CALL, Channels
from toolcards.core._hints import ToolHints
from toolcards.core._params import BaseToolParam
from toolcards.search._client import TavilySettings, WebSearch

__all__ = ["SearchTool", "WebCrawlParam", "WebFetchParam", "WebSearchParam"]


class WebSearchParam(BaseToolParam):
    """``web_search``: the defaults a call gets when the model leaves them out."""

    expose: set[Channels] = {TOOL_CALL, COMMAND}
    max_results: int = Field(default=5, ge=1, le=20)
    """Results per search when the model asks for no number (at most ``settings.max_results``)."""
    search_depth: Literal["basic", "advanced"] = "basic"
    """Tavily's search depth when the model asks for none: ``"advanced"`` finds more and costs more."""


class WebFetchParam(BaseToolParam):
    """``web_fetch``: extract the clean text of pages."""

    expose: set[Channels] = {TOOL_CALL}


class WebCrawlParam(BaseToolParam):
    """``web_crawl``: read several pages of one site."""

    expose: set[Channels] = {TOOL_CALL}


class SearchTool(ToolCard):
    """Web search through Tavily. ``settings`` holds the limits (result caps, characters per
    page, allowed and blocked domains, timeouts) and the name of the key's variable."""

    kind: ClassVar[str] = "search"

    settings: TavilySettings = Field(default_factory=TavilySettings)
    """How the card reaches Tavily and what it keeps of the answers."""
    web_search: WebSearchParam | bool = True
    web_fetch: WebFetchParam | bool = True
    web_crawl: WebCrawlParam | bool = False
    _client: WebSearch | None = PrivateAttr(default=None)

    @property
    def client(self) -> WebSearch:
        """The Tavily client for these settings (created on first use)."""
        if self._client is None:
            self._client = WebSearch(self.settings)
        return self._client

    @capability("web_search", untrusted_output=True, hints=ToolHints(title="Search web", open_world=True))
    def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=400)],
        max_results: Annotated[int, Field(ge=1, le=20)] | None = None,
        search_depth: Literal["basic", "advanced"] | None = None,
    ) -> str:
        """Search the web; returns titles, URLs and snippets.

        Args:
            query: What to look for, as a search-engine query.
            max_results: How many results (default set by the team).
            search_depth: "advanced" digs deeper but is slower.
        """
        param = self.param("web_search", WebSearchParam)
        return self.client.search(
            query, max_results=max_results or param.max_results, search_depth=search_depth or param.search_depth
        )

    @capability("web_fetch", untrusted_output=True, hints=ToolHints(title="Fetch pages", open_world=True))
    def fetch(self, urls: list[str], query: str | None = None) -> str:
        """Fetch pages and return their clean text.

        Args:
            urls: http(s) URLs to read.
            query: Keep only the parts relevant to this.
        """
        return self.client.fetch(urls, query)

    @capability(
        "web_crawl",
        untrusted_output=True,
        timeout_s=180,
        hints=ToolHints(title="Crawl website", open_world=True, long_running=True),
    )
    def crawl(self, url: str, instructions: str | None = None) -> str:
        """Crawl one site from a URL and return its pages' text.

        Args:
            url: Where to start.
            instructions: What to look for, e.g. "pricing pages".
        """
        return self.client.crawl(url, instructions)
