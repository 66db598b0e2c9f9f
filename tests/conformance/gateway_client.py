"""The client the official MCP conformance suite runs: our real gateway, driven for one scenario.

The suite (npm ``@modelcontextprotocol/conformance``) starts a test server, then runs
``python gateway_client.py URL`` with ``MCP_CONFORMANCE_SCENARIO`` set. This script builds the
gateway service exactly as ``ai-coding serve mcp_gateway`` does (its supervisor, connection and
OAuth code), with the one remote server at URL, and does what a user would: sign in when the
server asks (the browser step done headlessly: the authorization URL is fetched and its redirect
delivered to the gateway's own callback listener), then list the tools and call them, accepting
any question a server asks with its defaults (as a user pressing Enter on every field), and
opening the URL of a second sign-in a server asks for mid-call (scope step-up).

Exit 0 when the scenario's steps ran; the suite's checks say whether they conformed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

from services.kernel.config import Config
from services.mcp_gateway.accounts import Accounts
from services.mcp_gateway.domain import Progress, State
from services.mcp_gateway.elicitation import ElicitAsk
from services.mcp_gateway.gateway import Gateway
from services.mcp_gateway.main import build

SERVER = "conformance"
# Arguments for the tools the client scenarios offer (the rest are called with {}).
TOOL_ARGUMENTS: dict[str, dict[str, Any]] = {"add_numbers": {"a": 5, "b": 3}}
# The client id metadata document the suite's authorization server expects (as the SDK's own client uses).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
# The suite allows a client 30 s; a scenario whose server never lets us in ends before that.
DEADLINE_S = 25.0


async def _no_progress(progress: Progress) -> None:
    return None


def _decline(gateway: Gateway) -> Callable[[ElicitAsk], None]:
    """A user who refuses every question (AI_CODING_CONFORMANCE_DECLINE=1)."""

    def answer(ask: ElicitAsk) -> None:
        asyncio.get_running_loop().call_soon(gateway.elicitations.answer, ask.request_id, "decline", {})

    return answer


def _accept_with_defaults(gateway: Gateway) -> Callable[[ElicitAsk], None]:
    """A user who presses Enter on every field: accept, nothing typed (the gateway fills the defaults)."""

    def answer(ask: ElicitAsk) -> None:
        print(f"elicitation from {ask.server}: {ask.message} {ask.url}")
        if ask.mode == "url":  # a second sign-in mid-call (scope step-up): open it, then say done
            task = asyncio.ensure_future(_browse(ask.url))
            task.add_done_callback(lambda _: gateway.elicitations.answer(ask.request_id, "accept", {}))
            pending.add(task)
            return
        asyncio.get_running_loop().call_soon(gateway.elicitations.answer, ask.request_id, "accept", {})

    pending: set[asyncio.Future[None]] = set()
    return answer


async def _sign_in(accounts: Accounts, gateway: Gateway) -> None:
    """`ai-coding mcp login`, then the browser step."""
    url, _ = await accounts.login(SERVER)
    if not url:
        return
    await _browse(url)
    await gateway.supervisor(SERVER).wait_connected(30)


async def _browse(url: str) -> None:
    """The browser step without a browser: follow the authorization URL to our callback."""
    async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as http:
        response = await http.get(url)
        for _ in range(5):  # the authorization server may redirect through its own pages first
            location = response.headers.get("location", "")
            if not location:
                raise SystemExit(f"the authorization URL answered {response.status_code} without a redirect")
            response = await http.get(location)
            if location.startswith("http://127.0.0.1") or location.startswith("http://localhost"):
                break


def oauth_options(scenario: str, context: dict[str, Any], home: Path) -> dict[str, Any]:
    """The server's `oauth:` config a user would write for this scenario: the suite hands pre-registered
    credentials (MCP_CONFORMANCE_CONTEXT) as an administrator would."""
    options: dict[str, Any] = {"client_metadata_url": CLIENT_METADATA_URL}
    if context.get("client_id"):
        options["client_id"] = context["client_id"]
    if context.get("client_secret"):
        options["client_secret"] = context["client_secret"]
    if scenario.startswith("auth/client-credentials"):
        options["grant"] = "client_credentials"
    if context.get("private_key_pem"):
        key = home / "client-key.pem"
        key.write_text(str(context["private_key_pem"]))
        options["private_key_file"] = str(key)
        options["signing_algorithm"] = context.get("signing_algorithm") or "ES256"
    return options


async def run(url: str, scenario: str) -> int:
    home = Path(tempfile.mkdtemp(prefix="aic-conf-"))
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    entry = {"name": SERVER, "type": "remote", "url": url, "oauth": oauth_options(scenario, context, home)}
    service = build(Config(data={"mcp": {"servers": [entry]}}), sidecar=home / "mcp.local.yaml",
                    auth_path=home / "mcp-auth.json")
    gateway, accounts = service.extra["gateway"], service.extra["accounts"]
    assert isinstance(gateway, Gateway) and isinstance(accounts, Accounts)
    assert service.on_start is not None and service.on_shutdown is not None
    await service.on_start()
    try:
        sup = gateway.supervisor(SERVER)
        state = await sup.wait_settled(30)
        if state == State.NEEDS_AUTH or sup.auth_required:
            await _sign_in(accounts, gateway)
        if sup.state != State.CONNECTED:
            print(f"{scenario}: the server is {sup.state.value}: {sup.reason}", file=sys.stderr)
            return 1
        declining = os.environ.get("AI_CODING_CONFORMANCE_DECLINE") == "1"
        asker = _decline(gateway) if declining else _accept_with_defaults(gateway)
        report: dict[str, Any] = {"calls": {}}
        for tool in [e.tool for e in gateway.entries()]:
            outcome = await gateway.call(SERVER, tool, json.dumps(TOOL_ARGUMENTS.get(tool, {})), 30, _no_progress,
                                         asker)
            print(f"{tool}: ok={outcome.ok} {outcome.output[:200]}")
            report["calls"][tool] = {"ok": outcome.ok, "error_code": outcome.error_code, "hint": outcome.hint}
        report["state"] = sup.state.value
        await asyncio.sleep(2.0)  # long enough for a reconnect to have started
        report["state_later"], report["reason"] = sup.state.value, sup.reason
        if os.environ.get("AI_CODING_CONFORMANCE_REPORT"):
            Path(os.environ["AI_CODING_CONFORMANCE_REPORT"]).write_text(json.dumps(report))
        return 0
    finally:
        await service.on_shutdown()


def main() -> None:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    try:
        sys.exit(asyncio.run(asyncio.wait_for(run(sys.argv[-1], scenario), DEADLINE_S)))
    except TimeoutError:
        print(f"{scenario}: gave up after {DEADLINE_S:g} s", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
