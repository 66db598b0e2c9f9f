"""A local OAuth-protected MCP server: authorization server and resource server in one process.

The authorization server supports dynamic client registration and PKCE (the
SDK's auth routes), approves every authorization request at once (no login
page: the redirect goes straight back to the client's callback with a code),
and keeps codes and tokens in memory. The MCP endpoint ``/mcp`` answers 401
without a valid bearer token.

    python tests/mcp_servers/oauth_server.py PORT [PUBLIC_PORT]

PUBLIC_PORT: the port clients reach it on, when a proxy stands in front (its metadata names it).
"""

from __future__ import annotations

import secrets
import sys
import time

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class AutoApproveProvider:
    """In-memory OAuth authorization server that approves every request."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or ["mcp"], expires_at=time.time() + 300,
            client_id=client.client_id or "", code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri, redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        del self.codes[authorization_code.code]
        return self._issue(client.client_id or "", authorization_code.scopes, authorization_code.resource)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.tokens[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + 3600, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=3600, scope=" ".join(scopes),
                          refresh_token=refresh)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        del self.refresh[refresh_token.token]
        return self._issue(client.client_id or "", scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull,
                                          params: IdentityAssertionParams) -> OAuthToken:
        raise NotImplementedError("this test server does not take identity assertions")

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.tokens.pop(token.token, None)
        self.refresh.pop(token.token, None)


def make_server(port: int) -> MCPServer:
    """The server whose metadata (issuer, resource) says ``http://127.0.0.1:{port}``."""
    base = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "secure",
        log_level="WARNING",
        auth_server_provider=AutoApproveProvider(),
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["mcp"],
                                                                  default_scopes=["mcp"]),
            required_scopes=["mcp"],
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def secret_sum(a: int, b: int) -> str:
        """Add two integers, for signed-in clients only."""
        return f"signed-in sum: {a + b}"

    return server


if __name__ == "__main__":
    public = int(sys.argv[2]) if len(sys.argv) > 2 else int(sys.argv[1])
    make_server(public).run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
