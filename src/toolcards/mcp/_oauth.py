"""OAuth 2.0 sign-in for HTTP MCP servers: authorization code with PKCE, tokens on disk.

The flow (discovery, dynamic client registration, PKCE, refresh) is the MCP SDK's
``OAuthClientProvider``. This module adds what a long-lived, often unattended process needs:
:class:`OAuthTokenFile`, the SDK's ``TokenStorage`` as one file per server URL
(``internal_dir()/"oauth"/<sha256 of the URL>.json``, mode 0600, written atomically) holding
the tokens, their expiry, the registered client and the server's metadata, so a restarted
process refreshes instead of asking a person again; a loopback redirect on ``127.0.0.1`` for
interactive sign-in (the URL printed to stderr, a browser opened when possible); and, in a
headless process, :class:`OAuthAuthorizationRequired` at once, saying to run
:func:`~toolcards.mcp._probe.login` once from a terminal. :func:`build_oauth_auth` is what
:mod:`toolcards.mcp._connect` calls; ``mcp`` is imported only then.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import os
import socket
import sys
import threading
import time
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel

from toolcards.errors import ToolFailed
from toolcards.fs._atomic_write import atomic_write
from toolcards.fs._locations import internal_dir

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

    from toolcards.mcp._config import MCPOAuthConfig

__all__ = [
    "OAuthAuthorizationRequired",
    "OAuthTokenFile",
    "build_oauth_auth",
    "forget_tokens",
    "is_interactive",
    "token_file_path",
]

logger = logging.getLogger(__name__)

_Model = TypeVar("_Model", bound=BaseModel)

_CALLBACK_PATH = "/callback"
_EXPIRY_MARGIN_S = 30.0  # refresh a little early so a token never expires in flight
_POLL_S = 0.05  # how often the listener's thread checks whether it was asked to stop
_REQUEST_READ_TIMEOUT_S = 10.0


class OAuthAuthorizationRequired(ToolFailed):
    """The server needs a person to sign in, and this process cannot wait for one.

    Raised when the process is headless, or when nobody completed the sign-in within the
    callback timeout. :attr:`authorization_url` is the URL that was to be opened.
    """

    def __init__(self, message: str, authorization_url: str) -> None:
        super().__init__(message)
        self.authorization_url = authorization_url


def is_interactive() -> bool:
    """Whether a person can plausibly complete a browser sign-in for this process.

    True when a graphical display is available (``DISPLAY``/``WAYLAND_DISPLAY``, or macOS
    and Windows) or when stdin and stderr are terminals.
    """
    if _has_display():
        return True
    try:
        return sys.stdin is not None and sys.stdin.isatty() and sys.stderr.isatty()
    except (ValueError, OSError):  # closed or detached streams
        return False


def _has_display() -> bool:
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _normalise_url(server_url: str) -> str:
    return server_url.rstrip("/")


def token_file_path(server_url: str, directory: Path | None = None) -> Path:
    """Where the tokens for ``server_url`` are cached (the file may not exist yet).

    ``directory`` defaults to ``internal_dir()/"oauth"``; the name is the SHA-256 of the URL
    (trailing slash ignored), so URLs never appear in file names.
    """
    digest = hashlib.sha256(_normalise_url(server_url).encode()).hexdigest()[:32]
    return (directory if directory is not None else internal_dir() / "oauth") / f"{digest}.json"


def forget_tokens(server_url: str, directory: Path | None = None) -> bool:
    """Delete the cached tokens and client registration for ``server_url``.

    Returns whether a file was deleted. The next connection signs in again.
    """
    path = token_file_path(server_url, directory)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


class OAuthTokenFile:
    """The MCP SDK's ``TokenStorage`` protocol, kept in one private JSON file per server.

    The async protocol methods do small blocking file I/O. Every write replaces the file
    atomically with mode 0600 (its directory is created with mode 0700). A file that cannot
    be read or parsed counts as empty, so a corrupt cache costs a new sign-in, never a crash.
    """

    def __init__(self, server_url: str, directory: Path | None = None) -> None:
        self.server_url = _normalise_url(server_url)
        self.path = token_file_path(server_url, directory)

    # -- raw file -------------------------------------------------------------------

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            logger.warning("Ignoring unreadable OAuth token cache %s", self.path)
            return {}
        if not isinstance(data, dict) or data.get("server_url") != self.server_url:
            return {}
        return data

    def _update(self, **fields: Any) -> None:
        data = self._read()
        data.update(fields, server_url=self.server_url)
        atomic_write(self.path, json.dumps(data).encode("utf-8"), mode=0o600, directory_mode=0o700)

    # -- TokenStorage protocol ------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        """The cached tokens, or ``None``."""
        return self.load_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Cache ``tokens`` and their absolute expiry (``expires_in`` counted from now)."""
        expires_at = time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None
        self._update(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires_at)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The cached client registration, or ``None``."""
        return self.load_client_info()

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Cache the client registration."""
        self._update(client_info=client_info.model_dump(mode="json", exclude_none=True))

    # -- synchronous reads ----------------------------------------------------------

    def load_tokens(self) -> OAuthToken | None:
        """The cached tokens, or ``None`` (blocking read)."""
        from mcp.shared.auth import OAuthToken

        return _validated(OAuthToken, self._read().get("tokens"))

    def load_client_info(self) -> OAuthClientInformationFull | None:
        """The cached client registration, or ``None`` (blocking read)."""
        from mcp.shared.auth import OAuthClientInformationFull

        return _validated(OAuthClientInformationFull, self._read().get("client_info"))

    def expires_at(self) -> float | None:
        """When the cached access token expires (Unix time), if the server said."""
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    def load_metadata(self) -> dict[str, Any]:
        """The cached discovery results: ``oauth_metadata`` and ``protected_resource_metadata``."""
        value = self._read().get("metadata")
        return value if isinstance(value, dict) else {}

    def save_metadata(self, metadata: dict[str, Any]) -> None:
        """Cache discovery results (JSON-ready dicts) next to the tokens."""
        self._update(metadata=metadata)


def _validated(model: type[_Model], value: Any) -> _Model | None:
    if value is None:
        return None
    try:
        return model.model_validate(value)
    except ValueError:
        logger.warning("Ignoring malformed %s in the OAuth token cache", model.__name__)
        return None


class _LoopbackRedirect:
    """The SDK's redirect and callback handlers for one server: print/open, then listen once.

    The listener is the standard library's ``ThreadingHTTPServer`` on ``host:port``, started
    by :meth:`redirect` before the URL is shown and stopped by :meth:`callback`. Each
    connection gets its own thread, because browsers open speculative connections that never
    send a request. Requests for other paths, or whose ``state`` is not this sign-in's, are
    answered and ignored, so a stray local request cannot end the flow.
    """

    def __init__(self, *, server: str, host: str, port: int, timeout_s: float, interactive: bool) -> None:
        self.server = server
        self.host = host
        self.port = port
        self.timeout_s = timeout_s
        self.interactive = interactive
        self._url = ""
        self._listener: ThreadingHTTPServer | None = None
        self._outcome: list[AuthorizationCodeResult | ToolFailed] = []
        self._done = threading.Event()

    @property
    def redirect_uri(self) -> str:
        return f"http://{self.host}:{self.port}{_CALLBACK_PATH}"

    def _login_hint(self) -> str:
        return (
            "Sign in once from an interactive terminal with toolcards.mcp.login(config); "
            "the tokens are then cached and refreshed for later runs."
        )

    async def redirect(self, authorization_url: str) -> None:
        self._url = authorization_url
        if not self.interactive:
            raise OAuthAuthorizationRequired(
                f"MCP server {self.server} requires OAuth sign-in, and this process is not interactive "
                f"(no display, no terminal), so it cannot wait for the redirect. {self._login_hint()} "
                f"Authorization URL: {authorization_url}",
                authorization_url,
            )
        # Listen before the browser can possibly be redirected to us.
        self._listener = ThreadingHTTPServer((self.host, self.port), self._handler_class())
        threading.Thread(target=self._listener.serve_forever, args=(_POLL_S,), daemon=True).start()
        print(
            f"MCP server {self.server} requires sign-in. Open this URL in a browser "
            f"(waiting {self.timeout_s:g} s for the redirect to {self.redirect_uri}):\n{authorization_url}",
            file=sys.stderr,
            flush=True,
        )
        if _has_display():
            # Never awaited: a browser may block until its page loads.
            threading.Thread(target=_open_browser, args=(authorization_url,), daemon=True).start()

    async def callback(self) -> AuthorizationCodeResult:
        import anyio

        listener = self._listener
        if listener is None:  # the SDK always calls redirect first
            raise RuntimeError("callback() before redirect()")
        try:
            arrived = await anyio.to_thread.run_sync(self._done.wait, self.timeout_s, abandon_on_cancel=True)
        finally:
            self._listener = None
            with anyio.CancelScope(shield=True):  # a cancelled sign-in still frees its port
                await anyio.to_thread.run_sync(listener.shutdown)
            listener.server_close()
        if not arrived:
            raise OAuthAuthorizationRequired(
                f"Nobody completed the OAuth sign-in for MCP server {self.server} within "
                f"{self.timeout_s:g} s. {self._login_hint()} Authorization URL: {self._url}",
                self._url,
            )
        result = self._outcome[0]
        if isinstance(result, ToolFailed):
            raise result
        return result

    def _answer(self, path: str, query: str) -> tuple[int, str]:
        """The status and text for one request to the listener; records the sign-in's outcome."""
        from mcp.shared.auth import AuthorizationCodeResult

        params = {key: values[0] for key, values in parse_qs(query).items()}
        expected_state = parse_qs(urlsplit(self._url).query).get("state", [None])[0]
        if path != _CALLBACK_PATH:
            return 404, "Not found."
        if params.get("state") != expected_state:
            return 400, "This sign-in link is stale or not for this client."
        if "error" in params:
            reason = params.get("error_description") or params["error"]
            self._finish(ToolFailed(f"OAuth sign-in for MCP server {self.server} was refused: {reason}."))
            return 400, f"Sign-in failed: {reason}. You can close this tab."
        if "code" not in params:
            return 400, "Missing authorization code."
        self._finish(AuthorizationCodeResult(code=params["code"], state=params["state"], iss=params.get("iss")))
        return 200, "Signed in. You can close this tab."

    def _finish(self, outcome: AuthorizationCodeResult | ToolFailed) -> None:
        if not self._done.is_set():
            self._outcome.append(outcome)
            self._done.set()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        redirect = self

        class CallbackHandler(BaseHTTPRequestHandler):
            timeout = _REQUEST_READ_TIMEOUT_S  # a connection that sends nothing is dropped

            def do_GET(self) -> None:
                target = urlsplit(self.path)
                status, text = redirect._answer(target.path, target.query)
                body = f"<!doctype html><title>toolcards</title><p>{html.escape(text)}</p>".encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                logger.debug("OAuth redirect listener: " + format, *args)

        return CallbackHandler


def _open_browser(url: str) -> None:
    try:
        webbrowser.open(url)
    except Exception:  # a missing browser only means the printed URL must be used
        logger.debug("Could not open a browser", exc_info=True)


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def _registered_port(client_info: OAuthClientInformationFull | None, host: str) -> int | None:
    """The loopback port a cached registration was made for, so its redirect URI still matches."""
    if client_info is None or not client_info.redirect_uris:
        return None
    parts = urlsplit(str(client_info.redirect_uris[0]))
    if parts.hostname == host and parts.port:
        return parts.port
    return None


def build_oauth_auth(
    config: MCPOAuthConfig,
    server_url: str,
    *,
    server_label: str,
    token_dir: Path | None = None,
) -> httpx2.Auth:
    """Build the ``httpx2.Auth`` that signs requests to ``server_url`` in, per ``config``.

    Reads the token cache (blocking) to reuse the redirect port of an earlier registration.
    Raises :class:`~toolcards.errors.WiringError` when ``client_secret_env`` names an unset
    variable. Nothing is sent until the first request; sign-in happens then, as described
    in the module docstring.
    """
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata
    from pydantic import AnyUrl

    from toolcards.errors import WiringError

    storage = OAuthTokenFile(server_url, token_dir)
    stored_client = storage.load_client_info()
    host = config.redirect_host
    port = config.redirect_port or _registered_port(stored_client, host) or _free_port(host)
    interactive = config.interactive if config.interactive is not None else is_interactive()
    redirect = _LoopbackRedirect(
        server=server_label, host=host, port=port, timeout_s=config.callback_timeout_s, interactive=interactive
    )

    secret: str | None = None
    if config.client_secret_env:
        secret = os.environ.get(config.client_secret_env) or None
        if secret is None:
            raise WiringError(
                f"MCP server {server_label}: oauth.client_secret_env names {config.client_secret_env}, "
                "which is not set. Set it, or remove client_secret_env for a public client."
            )
    metadata = OAuthClientMetadata(
        client_name=config.client_name,
        redirect_uris=[AnyUrl(redirect.redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=" ".join(config.scopes) or None,
        token_endpoint_auth_method=("client_secret_post" if secret else "none"),
    )
    static_client = (
        OAuthClientInformationFull(
            client_id=config.client_id,
            client_secret=secret,
            **metadata.model_dump(exclude_none=True),
        )
        if config.client_id
        else None
    )

    class PersistentOAuthProvider(OAuthClientProvider):
        # The SDK keeps the expiry and the discovered endpoints in memory only: after a restart
        # it would treat an expired token as valid, and refresh at the MCP server's origin.
        # These overrides restore both from the token file and save them after a sign-in.

        async def _initialize(self) -> None:
            await super()._initialize()
            if static_client is not None:
                self.context.client_info = static_client
            expires_at = storage.expires_at()
            if self.context.current_tokens is not None and expires_at is not None:
                self.context.token_expiry_time = expires_at - _EXPIRY_MARGIN_S
            _restore_metadata(self.context, storage.load_metadata())

        async def _handle_token_response(self, response: httpx2.Response) -> None:
            await super()._handle_token_response(response)
            storage.save_metadata(_dump_metadata(self.context))

        def __repr__(self) -> str:
            return f"<OAuth for {server_label}>"

    return PersistentOAuthProvider(
        server_url=_normalise_url(server_url),
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect.redirect,
        callback_handler=redirect.callback,
    )


def _dump_metadata(context: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = {}
    for name in ("oauth_metadata", "protected_resource_metadata"):
        value = getattr(context, name, None)
        if value is not None:
            dumped[name] = value.model_dump(mode="json", exclude_none=True)
    if getattr(context, "auth_server_url", None):
        dumped["auth_server_url"] = context.auth_server_url
    return dumped


def _restore_metadata(context: Any, cached: dict[str, Any]) -> None:
    from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

    if context.oauth_metadata is None:
        context.oauth_metadata = _validated(OAuthMetadata, cached.get("oauth_metadata"))
    if context.protected_resource_metadata is None:
        context.protected_resource_metadata = _validated(
            ProtectedResourceMetadata, cached.get("protected_resource_metadata")
        )
    if context.auth_server_url is None and isinstance(cached.get("auth_server_url"), str):
        context.auth_server_url = cached["auth_server_url"]
