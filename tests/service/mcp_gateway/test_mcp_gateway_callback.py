"""The one-time local OAuth callback listener, over real HTTP."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request

import pytest

from services.mcp_gateway.errors import NeedsAuth
from services.mcp_gateway.oauth import LoginFlow


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""


def test_the_callback_accepts_one_code_and_refuses_everything_after() -> None:
    async def scenario() -> None:
        flow = LoginFlow(0)
        await flow.start()
        try:
            assert flow.redirect_uri.startswith("http://127.0.0.1:") and flow.redirect_uri.endswith("/callback")
            base = flow.redirect_uri
            assert (await asyncio.to_thread(_get, base.replace("/callback", "/other?code=x")))[0] == 404
            status, page = await asyncio.to_thread(_get, f"{base}?code=abc&state=xyz")
            assert status == 200 and "signed in" in page
            got = await asyncio.wait_for(flow.code, 5)
            assert (got.code, got.state) == ("abc", "xyz")
            assert (await asyncio.to_thread(_get, f"{base}?code=second&state=xyz"))[0] == 404
        finally:
            await flow.close()

    asyncio.run(scenario())


def test_a_refusal_from_the_authorization_server_ends_the_login_with_needs_auth() -> None:
    async def scenario() -> None:
        flow = LoginFlow(0)
        await flow.start()
        try:
            _, page = await asyncio.to_thread(_get, f"{flow.redirect_uri}?error=access_denied")
            assert "refused" in page
            with pytest.raises(NeedsAuth, match="access_denied"):
                await asyncio.wait_for(flow.code, 5)
        finally:
            await flow.close()

    asyncio.run(scenario())
