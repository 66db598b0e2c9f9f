"""OAuth for remote servers through the SDK: token storage, the one-time local callback.

The SDK's ``OAuthClientProvider`` does discovery, dynamic client registration,
PKCE and the token exchange. We give it: storage backed by
:class:`~services.mcp_gateway.auth_store.AuthStore`; a redirect handler that
either publishes the authorization URL to the Login RPC (a login is running)
or marks the server as needing a login (nobody is there to sign in); and a
callback handler fed by a one-time HTTP listener on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from services.kernel.config import expand_vars
from services.mcp_gateway.auth_store import AuthStore
from services.mcp_gateway.errors import NeedsAuth
from services.mcp_gateway.settings import OAuthOptions, ServerSettings

log = logging.getLogger("ai_coding.mcp_gateway.oauth")

LOGIN_WAIT_S = 600.0
"""How long a started login waits for the browser to come back."""

_PAGE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
         b"ai-coding: signed in. You can close this tab.\n")
_REFUSED = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
            b"ai-coding: the sign-in was refused. Run `ai-coding mcp login` to try again.\n")
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n"


class FileTokenStorage:
    """The SDK's ``TokenStorage`` over the gateway's token file, for one server (``fixed``: the
    client registered beforehand, used instead of any stored or new registration)."""

    def __init__(self, store: AuthStore, server: str, url: str, redirect_uri: str,
                 fixed: OAuthClientInformationFull | None = None) -> None:
        self._store = store
        self._server = server
        self._url = url
        self._redirect_uri = redirect_uri
        self._fixed = fixed

    async def get_tokens(self) -> OAuthToken | None:
        raw = self._store.entry(self._server, self._url).get("tokens")
        return OAuthToken.model_validate(raw) if raw else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._store.put(self._server, self._url, "tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self._fixed is not None:
            return self._fixed
        raw = self._store.entry(self._server, self._url).get("client_info")
        if not raw:
            return None
        info = OAuthClientInformationFull.model_validate(raw)
        # A registration made for another callback port cannot complete this login.
        if self._redirect_uri and str(self._redirect_uri) not in [str(u) for u in info.redirect_uris or []]:
            return None
        return info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self._fixed is not None:
            return
        self._store.put(self._server, self._url, "client_info",
                        client_info.model_dump(mode="json", exclude_none=True))


class LoginFlow:
    """One sign-in: a local callback listener, the URL to open, the code that comes back."""

    def __init__(self, port: int = 0) -> None:
        self._port = port
        self._server: asyncio.Server | None = None
        loop = asyncio.get_running_loop()
        self.url: asyncio.Future[str] = loop.create_future()
        self.code: asyncio.Future[AuthorizationCodeResult] = loop.create_future()

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self._port}/callback"

    async def start(self) -> None:
        """Listen on 127.0.0.1 (the configured port, or any free one)."""
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self._port)
        self._port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        """Stop listening (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()
        for fut in (self.url, self.code):
            if not fut.done():
                fut.cancel()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request_line.split()
            target = urlsplit(parts[1]) if len(parts) >= 2 else urlsplit("/")
            query = {k: v[0] for k, v in parse_qs(target.query).items()}
            if target.path != "/callback" or self.code.done() or not (query.get("code") or query.get("error")):
                writer.write(_NOT_FOUND)
                return
            if query.get("error"):
                self.code.set_exception(NeedsAuth(f"the authorization server refused: {query['error']}"))
                writer.write(_REFUSED)
                return
            self.code.set_result(AuthorizationCodeResult(code=query["code"], state=query.get("state"),
                                                         iss=query.get("iss")))
            writer.write(_PAGE)
        except (TimeoutError, OSError, UnicodeError):
            return
        finally:
            with contextlib.suppress(Exception):
                await writer.drain()
                writer.close()


class StepUp:
    """Asking the user, mid-call, to authorize again (a 403 ``insufficient_scope``: more scope).

    ``can_ask()`` says whether a call the loop follows runs on the server now; ``ask(message, url)``
    puts the URL to the user as an MCP URL elicitation on that call (services/mcp_gateway/elicitation.py)
    and returns "accept", "decline" or "cancel"."""

    def __init__(self, can_ask: Callable[[], bool], ask: Callable[[str, str], Awaitable[str]]) -> None:
        self.can_ask = can_ask
        self.ask = ask


def _port_of(redirect_uri: str) -> int:
    return urlsplit(redirect_uri).port or 0


def build_provider(settings: ServerSettings, store: AuthStore, login: LoginFlow | None,
                   mark_needs_auth: Callable[[], None], step_up: StepUp | None = None) -> OAuthClientProvider:
    """The SDK provider for one connection attempt of a remote server.

    With no login running, an authorization the SDK starts mid-call (scope step-up) gets its own
    fresh flow: a new callback listener on the registered port, its URL put to the user through
    ``step_up``, and the code that comes back to it (never the finished login's)."""
    redirect_uri = login.redirect_uri if login else ""
    if not redirect_uri:
        stored = store.entry(settings.name, settings.url).get("client_info") or {}
        uris = stored.get("redirect_uris") or []
        port = settings.oauth.callback_port if settings.oauth and settings.oauth.callback_port else 1
        redirect_uri = str(uris[0]) if uris else f"http://127.0.0.1:{port}/callback"
    metadata = OAuthClientMetadata(
        client_name="ai-coding",
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=(settings.oauth.scope or None) if settings.oauth else None,
    )

    again: list[LoginFlow] = []  # the mid-call authorization running now (at most one)

    async def authorize_again(url: str) -> bool:
        # Only a server already signed in into asks for more mid-call; a first sign-in is `mcp login`'s.
        if step_up is None or not step_up.can_ask() or not store.entry(settings.name, settings.url).get("tokens"):
            return False
        if login is not None:
            await login.close()  # its one code is spent; free the registered port for the new listener
        flow = LoginFlow(_port_of(redirect_uri))
        try:
            await flow.start()
        except OSError as exc:
            log.warning("mcp server %s: cannot listen for a second sign-in on %s: %s", settings.name,
                        redirect_uri, exc.strerror)
            return False
        flow.url.set_result(url)
        again.append(flow)

        async def ask() -> None:
            answer = await step_up.ask(f"server {settings.name!r} needs more permissions for this call: sign in "
                                       "again in your browser", url)
            if answer != "accept" and not flow.code.done():
                flow.code.set_exception(NeedsAuth(f"the second sign-in to {settings.name!r} was {answer}d"))

        asking = asyncio.ensure_future(ask())
        flow.code.add_done_callback(lambda _: asking.cancel() if not asking.done() else None)
        return True

    spent: list[bool] = []  # the running login's code was used (a later authorization is a new one)

    async def redirect_handler(url: str) -> None:
        if login is None or spent:
            if await authorize_again(url):
                return
            mark_needs_auth()
            raise NeedsAuth(f"server {settings.name!r} requires sign-in",
                            hint=f"Run `ai-coding mcp login {settings.name}`.")
        if not login.url.done():
            login.url.set_result(url)

    async def callback_handler() -> AuthorizationCodeResult:
        if again:
            flow = again.pop()
            try:
                return await asyncio.wait_for(asyncio.shield(flow.code), LOGIN_WAIT_S)
            except (NeedsAuth, TimeoutError):
                mark_needs_auth()
                raise
            finally:
                await flow.close()
        if login is None or spent:
            mark_needs_auth()
            raise NeedsAuth(f"server {settings.name!r} requires sign-in")
        code = await asyncio.wait_for(asyncio.shield(login.code), LOGIN_WAIT_S)
        spent.append(True)
        return code

    options = settings.oauth
    fixed = None
    if options is not None and options.client_id:
        secret = expand_vars(options.client_secret) if options.client_secret else None
        fixed = OAuthClientInformationFull(
            client_id=options.client_id, client_secret=secret, redirect_uris=[AnyUrl(redirect_uri)],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method="client_secret_basic" if secret else "none")
    # No login and no registration yet: sign-in is needed; do not register a client for a
    # placeholder redirect nobody listens on (a CIMD client needs no registration).
    cimd = bool(options is not None and options.client_metadata_url)
    storage = FileTokenStorage(store, settings.name, settings.url, redirect_uri if login else "", fixed)
    if options is not None and options.grant == "client_credentials":
        return machine_provider(settings.url, options, storage)
    provider = NoPlaceholderRegistration(
        settings.url, metadata, storage, redirect_handler=redirect_handler, callback_handler=callback_handler,
        client_metadata_url=(settings.oauth.client_metadata_url or None) if settings.oauth else None)
    if login is None and not cimd and fixed is None:
        provider.refuse_registration = (settings.name, mark_needs_auth)
    return provider


class NoPlaceholderRegistration(OAuthClientProvider):
    """The SDK's provider, except that with no login running it never sends a dynamic client
    registration: the server asked for sign-in (a 401), and a client registered now could only
    name a placeholder redirect nobody listens on. The connect stops as "sign in required"
    instead; a server that asks for no sign-in never gets that far."""

    refuse_registration: tuple[str, Callable[[], None]] | None = None
    waiting = ""
    """The OAuth endpoint (discovery, registration, token) whose answer the flow waits for now:
    a connect that runs out of time says which one hung."""

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super().async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                if self.refuse_registration is not None and self._is_registration(outgoing):
                    name, mark = self.refuse_registration
                    mark()
                    raise NeedsAuth(f"server {name!r} requires sign-in", hint=f"Run `ai-coding mcp login {name}`.")
                self.waiting = "" if outgoing.url == request.url else str(outgoing.url.copy_with(query=None))
                response = yield outgoing
                self.waiting = ""
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _is_registration(self, request: httpx2.Request) -> bool:
        if request.method != "POST":
            return False
        metadata = self.context.oauth_metadata
        endpoint = str(metadata.registration_endpoint) if metadata is not None and metadata.registration_endpoint \
            else ""
        url = str(request.url)
        return url == endpoint or (not endpoint and request.url.path.rstrip("/").endswith("/register"))


def machine_provider(url: str, options: OAuthOptions, storage: FileTokenStorage) -> OAuthClientProvider:
    """The client_credentials grant (no person signs in): client_secret_basic with the secret, or
    private_key_jwt with the key file."""
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    scope, issuer = options.scope or None, options.issuer or None
    if options.private_key_file:
        try:
            key = Path(options.private_key_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise NeedsAuth(f"cannot read oauth.private_key_file {options.private_key_file}: {exc.strerror}",
                            hint="Point oauth.private_key_file at the client's PEM key.") from None
        signer = SignedJWTParameters(issuer=options.client_id, subject=options.client_id, signing_key=key,
                                     signing_algorithm=options.signing_algorithm)
        return PrivateKeyJWTOAuthProvider(url, storage, options.client_id, signer.create_assertion_provider(),
                                          scope=scope, issuer=issuer)
    return ClientCredentialsOAuthProvider(url, storage, options.client_id, expand_vars(options.client_secret),
                                          scope=scope, issuer=issuer)
