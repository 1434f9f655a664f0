"""Serve the test MCP server over streamable HTTP on 127.0.0.1, optionally behind OAuth.

:class:`FakeAuthorizationServer` is an in-memory OAuth 2.0 authorization server (dynamic
client registration, authorization code with PKCE, refresh) that approves every request
at once, so a "browser" only has to follow its redirect. :func:`serve` runs a Starlette
app under uvicorn in a daemon thread and stops it on exit.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.mcp.servers import make_low_level_server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class FakeAuthorizationServer:
    """Approves every authorization at once; records grants so tests can see refreshes."""

    def __init__(self, *, token_lifetime_s: int = 3600) -> None:
        self.token_lifetime_s = token_lifetime_s
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.grants: list[str] = []

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str]) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + self.token_lifetime_s
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(
            access_token=access, expires_in=self.token_lifetime_s, refresh_token=refresh, scope=" ".join(scopes) or None
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.grants.append("authorization_code")
        return self._issue(client.client_id or "", authorization_code.scopes)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        self.grants.append("refresh_token")
        return self._issue(client.client_id or "", scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type")

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


class _HeaderRecorder:
    """ASGI middleware that keeps the headers of every request (lower-cased names)."""

    def __init__(self, app: ASGIApp, seen: list[dict[str, str]]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


@contextmanager
def serve(app: ASGIApp, port: int) -> Iterator[str]:
    """Run ``app`` on 127.0.0.1:``port`` in a thread; yield its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("test HTTP server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def plain_mcp_server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """The low-level test server at ``<base>/mcp``, no auth; yields the URL and recorded headers."""
    seen: list[dict[str, str]] = []
    app = make_low_level_server("tiny-http").streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True, host="127.0.0.1"
    )
    with serve(_HeaderRecorder(app, seen), free_port()) as base:
        yield f"{base}/mcp", seen


@contextmanager
def oauth_mcp_server(provider: FakeAuthorizationServer) -> Iterator[str]:
    """The low-level test server at ``<base>/mcp`` behind ``provider``; yields the MCP URL."""
    from mcp.server.auth.provider import ProviderTokenVerifier

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    app = make_low_level_server("tiny-oauth").streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        host="127.0.0.1",
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(enabled=True),
            validate_token_resource=False,
        ),
        auth_server_provider=provider,
        token_verifier=ProviderTokenVerifier(provider),
    )
    with serve(app, port):
        yield f"{base}/mcp"
