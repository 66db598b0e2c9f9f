"""OAuth end to end against our own local authorization server: 401 -> needs_auth ->
Login (dynamic registration + PKCE via the SDK) -> one-time local callback -> connected;
tokens persist 0600 across a restart; Logout returns to needs_auth."""

from __future__ import annotations

import asyncio
import json
import stat
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ai_coding.v1 import mcp_gateway_pb2 as pb

NEEDS_AUTH = pb.SERVER_STATE_NEEDS_AUTH
CONNECTED = pb.SERVER_STATE_CONNECTED


def _browser(url: str) -> str:
    """What a user's browser does: open the URL and follow redirects to the local callback."""
    with urllib.request.urlopen(url, timeout=30) as resp:
        return str(resp.read().decode())


def test_oauth_login_connects_persists_the_token_and_logout_forgets_it(
        gateway: Callable[..., Any], oauth_demo: str, isolated_home: Path) -> None:
    server = {"name": "secure", "type": "remote", "url": oauth_demo, "oauth": {"callback_port": 0},
              "timeout": {"startup": 20000}}
    token_file = isolated_home / ".local" / "share" / "ai-coding" / "mcp-auth.json"

    async def scenario() -> None:
        async with gateway([server]) as gw:
            waiting = await gw.wait_state("secure", NEEDS_AUTH, timeout=30)
            assert "ai-coding mcp login secure" in waiting.reason and waiting.degraded
            _, refused = await gw.call("secure", "secret_sum", '{"a": 1, "b": 2}')
            assert not refused.ok and refused.error.code == "mcp_server_unavailable"
            assert "mcp login secure" in refused.error.hint

            login = await gw.stub.Login(pb.LoginRequest(server="secure"), timeout=60)
            query = parse_qs(urlsplit(login.authorization_url).query)
            assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
            assert query["client_id"][0] and query["redirect_uri"][0].startswith("http://127.0.0.1:")
            page = await asyncio.to_thread(_browser, login.authorization_url)
            assert "signed in" in page

            await gw.wait_state("secure", CONNECTED, timeout=30)
            _, result = await gw.call("secure", "secret_sum", '{"a": 1234, "b": 5678}')
            assert result.ok and result.output == "signed-in sum: 6912"

        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        stored = json.loads(token_file.read_text())
        assert stored["secure"]["url"] == oauth_demo and stored["secure"]["tokens"]["access_token"]

        async with gateway([server]) as gw:  # a restart signs in from the stored token alone
            await gw.wait_state("secure", CONNECTED, timeout=30)
            again = await gw.stub.Login(pb.LoginRequest(server="secure"), timeout=30)
            assert again.authorization_url == ""
            out = await gw.stub.Logout(pb.LogoutRequest(server="secure"), timeout=30)
            assert out.status.name == "secure"
            await gw.wait_state("secure", NEEDS_AUTH, timeout=30)
            assert "secure" not in json.loads(token_file.read_text())

    asyncio.run(scenario())


def test_a_second_login_reuses_the_registered_client_and_its_callback_port(
        gateway: Callable[..., Any], oauth_demo: str, isolated_home: Path) -> None:
    server = {"name": "secure", "type": "remote", "url": oauth_demo, "oauth": {"callback_port": 0},
              "timeout": {"startup": 20000}}
    token_file = isolated_home / ".local" / "share" / "ai-coding" / "mcp-auth.json"

    async def sign_in(gw: Any) -> dict[str, list[str]]:
        await gw.wait_state("secure", NEEDS_AUTH, timeout=30)
        login = await gw.stub.Login(pb.LoginRequest(server="secure"), timeout=60)
        await asyncio.to_thread(_browser, login.authorization_url)
        await gw.wait_state("secure", CONNECTED, timeout=30)
        return parse_qs(urlsplit(login.authorization_url).query)

    async def scenario() -> None:
        async with gateway([server]) as gw:
            first = await sign_in(gw)
        stored = json.loads(token_file.read_text())
        del stored["secure"]["tokens"]  # the token is gone (expired, revoked): sign in again
        token_file.write_text(json.dumps(stored))
        async with gateway([server]) as gw:
            second = await sign_in(gw)
            _, result = await gw.call("secure", "secret_sum", '{"a": 1, "b": 2}')
            assert result.ok, result.error.message
        assert second["client_id"] == first["client_id"]  # no new registration
        assert second["redirect_uri"] == first["redirect_uri"]

    asyncio.run(scenario())


def test_a_first_connect_without_a_login_registers_no_client_for_a_placeholder_redirect(
        gateway: Callable[..., Any], oauth_demo: str, isolated_home: Path) -> None:
    server = {"name": "secure", "type": "remote", "url": oauth_demo, "timeout": {"startup": 20000}}
    token_file = isolated_home / ".local" / "share" / "ai-coding" / "mcp-auth.json"

    async def scenario() -> None:
        async with gateway([server]) as gw:
            waiting = await gw.wait_state("secure", NEEDS_AUTH, timeout=30)
            assert "ai-coding mcp login secure" in waiting.reason
            await asyncio.sleep(0.5)
            stored = json.loads(token_file.read_text()) if token_file.exists() else {}
            assert "client_info" not in stored.get("secure", {}), stored  # no registration kept
            login = await gw.stub.Login(pb.LoginRequest(server="secure"), timeout=60)  # the login registers
            redirect = parse_qs(urlsplit(login.authorization_url).query)["redirect_uri"][0]
            assert redirect.startswith("http://127.0.0.1:") and not redirect.startswith("http://127.0.0.1:1/")
            page = await asyncio.to_thread(_browser, login.authorization_url)
            assert "signed in" in page
            await gw.wait_state("secure", CONNECTED, timeout=30)
        info = json.loads(token_file.read_text())["secure"]["client_info"]
        assert info["redirect_uris"] == [redirect]

    asyncio.run(scenario())
