"""Login and logout of remote servers, and the opener that wires OAuth into each attempt."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from services.mcp_gateway.auth_store import AuthStore
from services.mcp_gateway.domain import McpSession, ServerView, State
from services.mcp_gateway.elicitation import ElicitReply
from services.mcp_gateway.errors import McpGatewayError
from services.mcp_gateway.gateway import Gateway
from services.mcp_gateway.settings import ServerSettings

if TYPE_CHECKING:
    from services.mcp_gateway.oauth import LoginFlow

# The mcp SDK (~0.75 s to import) is loaded only once a server is configured: connection and
# oauth import it, so they are imported where a session or a login starts. A gateway with no
# servers (the default) becomes SERVING without it, which is what bounds `ai-coding up`.

URL_WAIT_S = 30.0
"""How long Login waits for the server's discovery and registration to yield a URL."""


class Accounts:
    """Running logins per server plus the token store."""

    def __init__(self, store: AuthStore) -> None:
        self.store = store
        self.flows: dict[str, LoginFlow] = {}
        self.gateway: Gateway | None = None
        self._tasks: set[asyncio.Future[None]] = set()

    def _uses_oauth(self, settings: ServerSettings) -> bool:
        has_auth_header = any(k.lower() == "authorization" for k in settings.headers)
        return settings.type == "remote" and not has_auth_header

    @asynccontextmanager
    async def open(self, settings: ServerSettings) -> AsyncIterator[McpSession]:
        """The gateway's session opener: OAuth-aware for remote servers."""
        from services.mcp_gateway.connection import open_session
        from services.mcp_gateway.oauth import NoPlaceholderRegistration, StepUp, build_provider

        auth = None
        elicit = None
        kept = None
        if self.gateway is not None:
            kept = self.gateway.supervisor(settings.name).log
            broker, server = self.gateway.elicitations, settings.name

            async def elicit(message: str, mode: str, schema: Mapping[str, Any], url: str) -> ElicitReply:
                return await broker.elicit(server, message, mode, schema, url)

        if self._uses_oauth(settings) and self.gateway is not None:
            sup = self.gateway.supervisor(settings.name)
            flow = self.flows.get(settings.name) if sup.login_pending else None

            def mark() -> None:
                sup.auth_required = True

            broker, server = self.gateway.elicitations, settings.name

            async def ask(message: str, url: str) -> str:
                return (await broker.elicit(server, message, "url", {}, url)).action

            auth = build_provider(settings, self.store, flow, mark, StepUp(lambda: broker.busy(server), ask))
            provider = auth
            sup.waiting_on = lambda: provider.waiting if isinstance(provider, NoPlaceholderRegistration) else ""
        async with open_session(settings, auth, elicit, kept) as session:
            yield session

    async def login(self, name: str) -> tuple[str, ServerView]:
        """Start a sign-in; returns the URL to open ("" when the server needs none)."""
        gateway = self._gateway()
        sup = gateway.supervisor(name)
        if not self._uses_oauth(sup.settings):
            raise McpGatewayError(f"MCP server {name!r} does not sign in with OAuth",
                                  hint="Only remote servers without an Authorization header do.",
                                  reason="mcp_login_not_applicable")
        if sup.state == State.CONNECTED:
            return "", sup.view()
        old = self.flows.pop(name, None)
        if old is not None:
            await old.close()
        from services.mcp_gateway.oauth import LoginFlow

        port = sup.settings.oauth.callback_port if sup.settings.oauth else 0
        flow = LoginFlow(port or self._registered_port(sup.settings))
        try:
            try:
                await flow.start()
            except OSError:
                if port:
                    raise
                flow = LoginFlow(port)  # the registered port is taken: any port (a new registration)
                await flow.start()
        except OSError as exc:
            raise McpGatewayError(f"cannot listen for the login callback on 127.0.0.1:{port}: {exc.strerror}",
                                  hint="Free that port or set oauth.callback_port: 0.",
                                  reason="mcp_callback_port_busy") from None
        self.flows[name] = flow
        sup.begin_login()
        settled: asyncio.Future[bool] = asyncio.ensure_future(sup.wait_connected(URL_WAIT_S))
        waiters: set[asyncio.Future[object]] = {flow.url, settled}  # type: ignore[arg-type]
        try:
            await asyncio.wait(waiters, timeout=URL_WAIT_S, return_when=asyncio.FIRST_COMPLETED)
        finally:
            settled.cancel()
        if flow.url.done() and not flow.url.cancelled():
            task = asyncio.ensure_future(self._close_when_done(name, flow))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return flow.url.result(), sup.view()
        await flow.close()
        self.flows.pop(name, None)
        if sup.view().state == State.CONNECTED:
            return "", sup.view()
        raise McpGatewayError(f"MCP server {name!r} gave no sign-in URL within {URL_WAIT_S:g}s: "
                              f"{sup.reason or sup.state.value}", hint="Check the server URL and retry.",
                              reason="mcp_login_failed")

    def _registered_port(self, settings: ServerSettings) -> int:
        """The callback port of the client registered at an earlier login (0 = none): listening there
        again reuses that registration instead of registering a new client on every login."""
        stored = self.store.entry(settings.name, settings.url).get("client_info") or {}
        uris = stored.get("redirect_uris") or []
        try:
            parts = urlsplit(str(uris[0])) if uris else None
            return (parts.port or 0) if parts is not None and parts.hostname == "127.0.0.1" else 0
        except ValueError:
            return 0

    async def _close_when_done(self, name: str, flow: LoginFlow) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(flow.code), timeout=600)
        sup = self._gateway().supervisor(name)
        await sup.wait_settled(120)
        await flow.close()
        if self.flows.get(name) is flow:
            del self.flows[name]

    async def logout(self, name: str) -> ServerView:
        """Forget the tokens; the server waits for a new login."""
        sup = self._gateway().supervisor(name)
        self.store.delete(name)
        if self._uses_oauth(sup.settings):
            sup.logout()
        return sup.view()

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for flow in list(self.flows.values()):
            await flow.close()
        self.flows.clear()

    def _gateway(self) -> Gateway:
        if self.gateway is None:
            raise McpGatewayError("the gateway is not started")
        return self.gateway
