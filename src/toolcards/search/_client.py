"""Web search, page extraction and crawling through Tavily.

:class:`TavilySettings` is the serialisable configuration a search card holds;
:class:`WebSearch` runs :meth:`~WebSearch.search`, :meth:`~WebSearch.fetch` (Tavily extract)
and :meth:`~WebSearch.crawl` with it and returns compact text. Shared contract:

* The API key is read from the variable named by :attr:`TavilySettings.api_key_env` at every
  call, never stored; without it (or ``tavily-python``) the call returns one sentence saying
  why the operation is unavailable, and does no I/O.
* Bad arguments and transient failures (timeouts, connection errors, HTTP 429 and 5xx, a
  malformed response) raise :class:`~toolcards.errors.RetriableError` (a timeout as
  :class:`~toolcards.errors.ToolTimeout`); failures a retry cannot fix (401, 403/432/433,
  other 4xx) raise :class:`~toolcards.errors.ToolFailed`. No other exception escapes.
* Calls block on the network up to the timeout; each uses its own HTTP session, so one
  :class:`WebSearch` may serve many threads.

The client's ``get_search_context`` is never used: it downloads tokenizer data at run time.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolcards.errors import RetriableError, ToolFailed, ToolTimeout
from toolcards.search._render import (
    parse_failures,
    parse_pages,
    parse_search,
    render_crawl,
    render_fetch,
    render_search,
)

if TYPE_CHECKING:
    from tavily import TavilyClient

__all__ = ["SearchDepth", "TavilySettings", "WebSearch"]

logger = logging.getLogger(__name__)

SearchDepth = Literal["basic", "advanced"]
"""Tavily's search depths offered to callers: ``advanced`` costs two credits instead of one."""

_MAX_QUERY_CHARS = 400  # Tavily rejects longer queries with a 400.
_TAVILY_MAX_URLS = 20  # Tavily's own limit per extract request.


class TavilySettings(BaseModel):
    """How a search card talks to Tavily. Every field is plain data; no secret is stored."""

    model_config = ConfigDict(extra="forbid")

    api_key_env: str = Field(default="TAVILY_API_KEY", min_length=1)
    """Environment variable that holds the API key, read at each call."""
    api_base_url: str | None = None
    """Override of ``https://api.tavily.com`` (a proxy or a test server)."""
    timeout_s: float = Field(default=30.0, gt=0, le=60)
    """Time limit of one search or extract request, in seconds (Tavily accepts at most 60)."""
    crawl_timeout_s: float = Field(default=90.0, ge=10, le=150)
    """Time limit of one crawl, in seconds (Tavily accepts 10 to 150)."""
    max_results: int = Field(default=8, ge=1, le=20)
    """Most search results a caller may ask for; larger requests are lowered to it."""
    max_snippet_chars: int = Field(default=600, ge=50)
    """Cap on each search snippet, in characters."""
    max_chars: int = Field(default=4000, ge=200)
    """Cap on the text of each fetched or crawled page, in characters."""
    max_urls: int = Field(default=5, ge=1, le=_TAVILY_MAX_URLS)
    """Most URLs one fetch may ask for."""
    crawl_limit: int = Field(default=10, ge=1, le=100)
    """Most pages one crawl returns."""
    crawl_max_depth: int = Field(default=1, ge=1, le=5)
    """How many links deep a crawl follows from its start URL."""
    include_domains: list[str] = Field(default_factory=list)
    """If set, only these domains (and their subdomains) are searched, fetched or crawled."""
    exclude_domains: list[str] = Field(default_factory=list)
    """Domains (and their subdomains) never searched, fetched or crawled."""

    @field_validator("include_domains", "exclude_domains")
    @classmethod
    def _normalise_domains(cls, domains: list[str]) -> list[str]:
        return [d.strip().lower().strip(".") for d in domains if d.strip().strip(".")]


def _domain_matches(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)


class WebSearch:
    """Runs Tavily search, extract and crawl with one :class:`TavilySettings`.

    Cheap to build (imports nothing heavy); the Tavily client is imported and created at
    each call. See the module docstring for the error contract.
    """

    def __init__(self, settings: TavilySettings | None = None) -> None:
        self.settings = settings if settings is not None else TavilySettings()

    # -- availability -------------------------------------------------------------

    def unavailable_reason(self) -> str | None:
        """Why calls cannot reach Tavily right now (no key, no package), or ``None`` if they can."""
        if not os.environ.get(self.settings.api_key_env, "").strip():
            return f"{self.settings.api_key_env} is not set"
        try:
            import tavily  # noqa: F401
        except ImportError:
            return "the tavily-python package is not installed (pip install 'toolcards[search]')"
        return None

    def _unavailable(self, what: str) -> str | None:
        reason = self.unavailable_reason()
        if reason is None:
            return None
        return f"{what} is unavailable: {reason}. Continue without web results."

    # -- operations ---------------------------------------------------------------

    def search(self, query: str, max_results: int = 5, search_depth: SearchDepth = "basic") -> str:
        """Search the web and return numbered results: title, URL and a capped snippet.

        ``max_results`` above :attr:`TavilySettings.max_results` is lowered to it. Blocks
        for up to :attr:`TavilySettings.timeout_s`. Returns the unavailability sentence
        when there is no key; raises as described in the module docstring.
        """
        unavailable = self._unavailable("Web search")
        if unavailable:
            return unavailable
        query = query.strip() if isinstance(query, str) else ""
        if not query:
            raise RetriableError("The search query is empty. Pass a few words describing what to find.")
        if len(query) > _MAX_QUERY_CHARS:
            raise RetriableError(
                f"The search query is {len(query)} characters long; the limit is {_MAX_QUERY_CHARS}. "
                "Shorten it to the key terms and retry."
            )
        if max_results < 1:
            raise RetriableError(f"max_results is {max_results}; pass a number from 1 to {self.settings.max_results}.")
        if search_depth not in ("basic", "advanced"):
            raise RetriableError(f"search_depth {search_depth!r} is not known; use 'basic' or 'advanced'.")
        settings = self.settings
        options: dict[str, Any] = {
            "max_results": min(max_results, settings.max_results),
            "search_depth": search_depth,
            "timeout": settings.timeout_s,
        }
        if settings.include_domains:
            options["include_domains"] = settings.include_domains
        if settings.exclude_domains:
            options["exclude_domains"] = settings.exclude_domains
        body = self._call("Web search", lambda client: client.search(query, **options))
        pages = self._parse("Web search", parse_search, body)
        return render_search(query, pages, max_snippet_chars=settings.max_snippet_chars)

    def fetch(self, urls: list[str], query: str | None = None) -> str:
        """Extract the clean text of web pages, each capped at :attr:`TavilySettings.max_chars`.

        With ``query``, Tavily returns the passages of each page most relevant to it
        instead of the page from the top. Pages Tavily could not extract are listed after
        the others with the reason. Blocks for up to :attr:`TavilySettings.timeout_s`.
        Returns the unavailability sentence when there is no key; raises as described in
        the module docstring.
        """
        unavailable = self._unavailable("Web page fetching")
        if unavailable:
            return unavailable
        if isinstance(urls, str):
            urls = [urls]
        urls = list(dict.fromkeys(u.strip() for u in urls if isinstance(u, str) and u.strip()))
        if not urls:
            raise RetriableError("No URL given. Pass one or more full URLs such as https://example.com/page.")
        if len(urls) > self.settings.max_urls:
            raise RetriableError(
                f"{len(urls)} URLs given; at most {self.settings.max_urls} may be fetched at once. "
                "Fetch the most promising ones first."
            )
        for url in urls:
            self._check_url(url)
        options: dict[str, Any] = {"format": "markdown", "timeout": self.settings.timeout_s}
        if query and query.strip():
            options["query"] = query.strip()[:_MAX_QUERY_CHARS]
            options["chunks_per_source"] = 3
        body = self._call("Web page fetching", lambda client: client.extract(urls, **options))
        pages = self._parse("Web page fetching", parse_pages, body)
        failures = self._parse("Web page fetching", parse_failures, body)
        return render_fetch(pages, failures, max_chars=self.settings.max_chars)

    def crawl(self, url: str, instructions: str | None = None) -> str:
        """Crawl a site from ``url`` and return the text of its pages, each capped.

        ``instructions`` (natural language) steer which pages Tavily keeps. The crawl stays
        on the start URL's site, follows :attr:`TavilySettings.crawl_max_depth` links deep
        and returns at most :attr:`TavilySettings.crawl_limit` pages. Blocks for up to
        :attr:`TavilySettings.crawl_timeout_s`. Returns the unavailability sentence when
        there is no key; raises as described in the module docstring.
        """
        unavailable = self._unavailable("Web crawling")
        if unavailable:
            return unavailable
        url = url.strip() if isinstance(url, str) else ""
        if not url:
            raise RetriableError("No URL given. Pass the full start URL, such as https://docs.example.com/.")
        self._check_url(url)
        settings = self.settings
        options: dict[str, Any] = {
            "max_depth": settings.crawl_max_depth,
            "limit": settings.crawl_limit,
            "allow_external": False,
            "format": "markdown",
            "timeout": settings.crawl_timeout_s,
        }
        if instructions and instructions.strip():
            options["instructions"] = instructions.strip()
        if settings.exclude_domains:
            options["exclude_domains"] = [rf"^(.+\.)?{re.escape(d)}$" for d in settings.exclude_domains]
        body = self._call("Web crawling", lambda client: client.crawl(url, **options))
        pages = self._parse("Web crawling", parse_pages, body)
        return render_crawl(url, pages, max_chars=settings.max_chars)

    # -- plumbing -----------------------------------------------------------------

    def _check_url(self, url: str) -> None:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if parts.scheme not in ("http", "https") or not host:
            raise RetriableError(f"{url!r} is not an http(s) URL. Pass a full URL such as https://example.com/page.")
        settings = self.settings
        if any(_domain_matches(host, d) for d in settings.exclude_domains):
            raise RetriableError(f"{url} is on an excluded domain ({host}). Use a source from another domain.")
        if settings.include_domains and not any(_domain_matches(host, d) for d in settings.include_domains):
            allowed = ", ".join(settings.include_domains)
            raise RetriableError(f"{url} is outside the allowed domains ({allowed}). Use a URL on one of them.")

    @staticmethod
    def _parse(what: str, parse: Callable[[Any], Any], body: Any) -> Any:
        try:
            return parse(body)
        except ValueError as exc:
            raise RetriableError(
                f"{what} failed: Tavily returned an unexpected response ({exc}). Retry later."
            ) from exc

    def _call(self, what: str, send: Callable[[TavilyClient], Any]) -> Any:
        from tavily import TavilyClient

        key = os.environ.get(self.settings.api_key_env, "").strip()
        if not key:  # unset since the availability check; never fall into Tavily's keyless mode
            raise ToolFailed(f"{what} is unavailable: {self.settings.api_key_env} is not set.")
        client = TavilyClient(api_key=key, api_base_url=self.settings.api_base_url or None)
        try:
            with _translate_errors(what, self.settings.api_key_env):
                return send(client)
        finally:
            client.close()


def _detail(exc: BaseException) -> str:
    text = str(exc).strip()
    return f": {text}" if text else ""


@contextmanager
def _translate_errors(what: str, key_env: str) -> Iterator[None]:
    """Turn every failure of the Tavily client into a toolcards error, chained."""
    import requests
    from tavily import errors as tavily_errors

    try:
        yield
    except tavily_errors.InvalidAPIKeyError as exc:
        raise ToolFailed(
            f"{what} failed: Tavily rejected the API key in {key_env} (HTTP 401{_detail(exc)}). "
            "Continue without web results."
        ) from exc
    except tavily_errors.ForbiddenError as exc:
        raise ToolFailed(
            f"{what} failed: Tavily refused the request (HTTP 403 or plan limit reached{_detail(exc)}). "
            "Continue without web results."
        ) from exc
    except tavily_errors.UsageLimitExceededError as exc:
        raise RetriableError(
            f"{what} failed: Tavily is rate-limiting requests (HTTP 429{_detail(exc)}). "
            "Retry in a minute with fewer or narrower requests, or continue without web results."
        ) from exc
    except tavily_errors.BadRequestError as exc:
        raise ToolFailed(f"{what} failed: Tavily rejected the request (HTTP 400{_detail(exc)}).") from exc
    except tavily_errors.TimeoutError as exc:
        raise ToolTimeout(
            f"{what} failed: Tavily did not answer in time ({exc}). Retry later or narrow the request."
        ) from exc
    except requests.HTTPError as exc:
        status = exc.response.status_code if exc.response is not None else 0
        if status >= 500:
            raise RetriableError(f"{what} failed: Tavily had a server error (HTTP {status}). Retry later.") from exc
        raise ToolFailed(f"{what} failed: Tavily answered HTTP {status}{_detail(exc)}.") from exc
    except requests.JSONDecodeError as exc:
        raise RetriableError(f"{what} failed: Tavily returned a response that is not valid JSON. Retry later.") from exc
    except requests.Timeout as exc:
        raise ToolTimeout(f"{what} failed: the request to Tavily timed out. Retry later.") from exc
    except requests.RequestException as exc:
        logger.debug("Tavily request failed", exc_info=True)
        raise RetriableError(f"{what} failed: could not reach Tavily ({type(exc).__name__}). Retry later.") from exc
    except (AttributeError, TypeError) as exc:
        # The client assumes a JSON object body (`body.setdefault(...)`) and does
        # `raise response.raise_for_status()`, which is `raise None` for a non-200 success
        # status. Both surface as these; they are logged so a real bug stays visible.
        logger.warning("Tavily client failed on an unexpected response", exc_info=True)
        raise RetriableError(
            f"{what} failed: Tavily returned an unexpected response ({type(exc).__name__}). Retry later."
        ) from exc
