"""OAuth sign-in: the token file, headless refusal, and the full flow against a local fake server.

The full flow runs for real: discovery, dynamic registration, PKCE authorization code
and refresh against :class:`FakeAuthorizationServer` on 127.0.0.1; only the browser is
replaced (by a function that follows the authorization server's redirect).
"""

from __future__ import annotations

import json
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx2
import pytest
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from tests.mcp.http_servers import FakeAuthorizationServer, free_port, oauth_mcp_server
from tests.mcp.servers import TOOLS
from toolcards.errors import ToolFailed, WiringError
from toolcards.mcp import (
    MCPHTTPConnectionConfig,
    MCPOAuthConfig,
    OAuthAuthorizationRequired,
    OAuthTokenFile,
    build_toolset,
    forget_tokens,
    login,
    probe,
)
from toolcards.mcp._oauth import _LoopbackRedirect, is_interactive, token_file_path

URL = "https://mcp.example.com/mcp"


# -- token file -----------------------------------------------------------------------


def test_token_file_round_trips_tokens_and_client_info(tmp_path: Path) -> None:
    store = OAuthTokenFile(URL, tmp_path)
    tokens = OAuthToken(access_token="a", refresh_token="r", expires_in=600, scope="read")
    client = OAuthClientInformationFull(client_id="c1", redirect_uris=["http://127.0.0.1:5000/callback"])  # type: ignore[list-item]

    async def scenario() -> None:
        assert await store.get_tokens() is None
        await store.set_tokens(tokens)
        await store.set_client_info(client)
        again = OAuthTokenFile(URL + "/", tmp_path)  # a trailing slash names the same server
        assert await again.get_tokens() == tokens
        assert await again.get_client_info() == client

    before = time.time()
    anyio.run(scenario)
    expires_at = store.expires_at()
    assert expires_at is not None and before + 600 <= expires_at <= time.time() + 600


def test_token_file_is_private_and_named_by_a_hash(tmp_path: Path) -> None:
    store = OAuthTokenFile(URL, tmp_path / "oauth")
    anyio.run(store.set_tokens, OAuthToken(access_token="secret"))
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert "example" not in store.path.name and store.path.suffix == ".json"
    assert token_file_path("https://other.example.com/mcp", tmp_path / "oauth") != store.path
    assert list(store.path.parent.iterdir()) == [store.path]  # no temporary file left behind


def test_token_file_defaults_under_the_internal_dir(isolated_root: Path) -> None:
    assert token_file_path(URL).parent == isolated_root / ".toolcards" / "oauth"


def test_unreadable_or_foreign_token_files_count_as_empty(tmp_path: Path) -> None:
    store = OAuthTokenFile(URL, tmp_path)
    store.path.write_text("{not json")
    assert store.load_tokens() is None
    store.path.write_text(json.dumps({"server_url": "https://elsewhere/mcp", "tokens": {"access_token": "x"}}))
    assert store.load_tokens() is None
    store.path.write_text(json.dumps({"server_url": URL, "tokens": {"no_access_token": 1}}))
    assert store.load_tokens() is None


def test_forget_tokens(tmp_path: Path) -> None:
    store = OAuthTokenFile(URL, tmp_path)
    anyio.run(store.set_tokens, OAuthToken(access_token="x"))
    assert forget_tokens(URL, tmp_path) is True
    assert forget_tokens(URL, tmp_path) is False
    assert store.load_tokens() is None


# -- interactivity ----------------------------------------------------------------------


class _Stream:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="a display is assumed there")
def test_is_interactive_needs_a_display_or_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(sys, "stdin", _Stream(False))
    monkeypatch.setattr(sys, "stderr", _Stream(False))
    assert is_interactive() is False
    monkeypatch.setattr(sys, "stdin", _Stream(True))
    monkeypatch.setattr(sys, "stderr", _Stream(True))
    assert is_interactive() is True
    monkeypatch.setattr(sys, "stdin", _Stream(False))
    monkeypatch.setenv("DISPLAY", ":0")
    assert is_interactive() is True


def test_an_unset_client_secret_variable_is_a_wiring_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TC_OAUTH_SECRET", raising=False)
    config = MCPHTTPConnectionConfig(
        url=URL, name="corp", oauth=MCPOAuthConfig(client_id="pre", client_secret_env="TC_OAUTH_SECRET")
    )
    with pytest.raises(WiringError, match=r"MCP server corp: oauth\.client_secret_env names TC_OAUTH_SECRET"):
        build_toolset(config)


# -- the flow against a local authorization server -----------------------------------


@pytest.fixture
def provider() -> FakeAuthorizationServer:
    return FakeAuthorizationServer()


@pytest.fixture
def mcp_url(provider: FakeAuthorizationServer) -> Iterator[str]:
    with oauth_mcp_server(provider) as url:
        yield url


class FakeBrowser:
    """Stands in for webbrowser.open: follows the authorization server's redirect to our listener."""

    def __init__(self, action: Callable[[str], None] | None = None) -> None:
        self.opened: list[str] = []
        self.action = action or self.follow
        self.done = threading.Event()

    def follow(self, url: str) -> None:
        httpx2.get(url, follow_redirects=True, timeout=10)

    def __call__(self, url: str, *args: object, **kwargs: object) -> bool:
        self.opened.append(url)
        try:
            self.action(url)
        finally:
            self.done.set()
        return True


BrowserThat = Callable[[Callable[[str], None] | None], FakeBrowser]
"""Installs a browser doing the given action (``None``: follow the redirect) with each URL."""


@pytest.fixture
def browser_that(monkeypatch: pytest.MonkeyPatch) -> BrowserThat:
    """Installs, on a display, a browser that does ``action`` with each URL it is asked to open."""

    def install(action: Callable[[str], None] | None) -> FakeBrowser:
        fake = FakeBrowser(action)
        monkeypatch.setenv("DISPLAY", ":99")
        monkeypatch.setattr("webbrowser.open", fake)
        return fake

    return install


@pytest.fixture
def browser(browser_that: BrowserThat) -> FakeBrowser:
    """A browser that follows the authorization server's redirect, as a person signing in would."""
    return browser_that(None)


def oauth_config(url: str, **oauth: object) -> MCPHTTPConnectionConfig:
    return MCPHTTPConnectionConfig(url=url, name="secure", oauth=MCPOAuthConfig.model_validate(oauth))


def test_headless_process_gets_the_url_instead_of_waiting(mcp_url: str, provider: FakeAuthorizationServer) -> None:
    with pytest.raises(OAuthAuthorizationRequired) as info:
        probe(oauth_config(mcp_url, interactive=False))
    error = info.value
    assert isinstance(error, ToolFailed)
    assert error.authorization_url.startswith(mcp_url.removesuffix("/mcp") + "/authorize?")
    query = parse_qs(urlsplit(error.authorization_url).query)
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"]
    message = str(error)
    assert message.startswith("MCP server secure requires OAuth sign-in, and this process is not interactive")
    assert "toolcards.mcp.login(config)" in message
    assert message.endswith(error.authorization_url)
    assert provider.grants == []


def test_interactive_sign_in_caches_tokens_and_later_runs_reuse_them(
    mcp_url: str, provider: FakeAuthorizationServer, browser: FakeBrowser, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = probe(oauth_config(mcp_url, interactive=True, callback_timeout_s=20))
    assert [t.name for t in tools] == list(TOOLS)
    assert len(browser.opened) == 1
    assert browser.opened[0] in capsys.readouterr().err  # the URL is printed too
    assert provider.grants == ["authorization_code"]

    cache = OAuthTokenFile(mcp_url)
    assert stat.S_IMODE(cache.path.stat().st_mode) == 0o600
    assert cache.load_tokens() is not None and cache.load_client_info() is not None
    assert cache.load_metadata()["oauth_metadata"]["token_endpoint"].endswith("/token")

    # A later headless run uses the cached token: no browser, no new grant.
    assert len(probe(oauth_config(mcp_url, interactive=False))) == len(TOOLS)
    assert len(browser.opened) == 1
    assert provider.grants == ["authorization_code"]


def test_an_expired_cached_token_is_refreshed_without_a_person(
    mcp_url: str, provider: FakeAuthorizationServer, browser: FakeBrowser
) -> None:
    provider.token_lifetime_s = 5  # inside the refresh margin: stale as soon as it is reloaded
    login(oauth_config(mcp_url, interactive=False))  # login forces interactive
    assert provider.grants == ["authorization_code"]

    assert len(probe(oauth_config(mcp_url, interactive=False))) == len(TOOLS)
    assert provider.grants == ["authorization_code", "refresh_token"]
    assert len(browser.opened) == 1


def test_nobody_signing_in_times_out_with_the_url(
    mcp_url: str,
    browser_that: BrowserThat,
    capsys: pytest.CaptureFixture[str],
) -> None:
    browser_that(lambda url: None)  # a browser nobody looks at
    with pytest.raises(OAuthAuthorizationRequired) as info:
        probe(oauth_config(mcp_url, interactive=True, callback_timeout_s=0.5))
    assert str(info.value).startswith("Nobody completed the OAuth sign-in for MCP server secure within 0.5 s")
    assert info.value.authorization_url in capsys.readouterr().err


def test_stray_requests_to_the_listener_do_not_end_the_sign_in(
    mcp_url: str, provider: FakeAuthorizationServer, browser_that: BrowserThat
) -> None:
    answers: list[int] = []

    def noisy(url: str) -> None:
        redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
        base = redirect.removesuffix("/callback")
        parts = urlsplit(base)
        # A speculative connection that never sends a request, held open throughout.
        with socket.create_connection((parts.hostname, parts.port)):
            answers.append(httpx2.get(f"{base}/favicon.ico", timeout=10).status_code)
            forged = {"code": "stolen", "state": "not-the-state"}
            answers.append(httpx2.get(f"{redirect}?{urlencode(forged)}", timeout=10).status_code)
            answers.append(httpx2.get(url, follow_redirects=True, timeout=10).status_code)

    browser_that(noisy)
    assert len(probe(oauth_config(mcp_url, interactive=True, callback_timeout_s=20))) == len(TOOLS)
    assert answers == [404, 400, 200]
    assert provider.grants == ["authorization_code"]


def test_a_refused_sign_in_is_a_tool_failure(mcp_url: str, browser_that: BrowserThat) -> None:
    def deny(url: str) -> None:
        query = parse_qs(urlsplit(url).query)
        redirect = query["redirect_uri"][0]
        denial = {"error": "access_denied", "error_description": "user said no", "state": query["state"][0]}
        httpx2.get(f"{redirect}?{urlencode(denial)}", timeout=10)

    browser_that(deny)
    with pytest.raises(ToolFailed, match="OAuth sign-in for MCP server secure was refused: user said no"):
        probe(oauth_config(mcp_url, interactive=True, callback_timeout_s=20))


def test_a_pre_registered_client_signs_in_with_its_secret_and_registers_nothing(
    mcp_url: str, provider: FakeAuthorizationServer, browser: FakeBrowser, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    provider.clients["pre"] = OAuthClientInformationFull(
        client_id="pre",
        client_secret="s3cret",
        redirect_uris=[f"http://127.0.0.1:{port}/callback"],  # type: ignore[list-item]
        token_endpoint_auth_method="client_secret_post",
        grant_types=["authorization_code", "refresh_token"],
    )
    monkeypatch.setenv("TC_OAUTH_SECRET", "s3cret")
    config = oauth_config(mcp_url, client_id="pre", client_secret_env="TC_OAUTH_SECRET", redirect_port=port)
    assert len(login(config)) == len(TOOLS)
    assert provider.grants == ["authorization_code"]
    assert list(provider.clients) == ["pre"]
    assert "s3cret" not in config.model_dump_json()


def test_a_cancelled_sign_in_stops_listening(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    port = free_port()
    redirect = _LoopbackRedirect(server="secure", host="127.0.0.1", port=port, timeout_s=30, interactive=True)

    async def abandon() -> None:
        await redirect.redirect("https://auth.example.com/authorize?state=s")
        with anyio.move_on_after(0.2):
            await redirect.callback()

    anyio.run(abandon)
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", port))  # free again
