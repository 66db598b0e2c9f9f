"""Asking the user about a sandboxed command's connection to a host the allow-list does not name.

It is an approval like any other on the turn's stream (``ApprovalRequested`` with tool
``network``), so the REPL, ``attach``, ``run`` on a terminal and ACP clients answer it as they
answer a tool approval: y = this command, a = this session, n (or s, or no answer) = refused.
Never automatic: ``--auto-approve`` does not answer it, and with nobody to ask (a headless run)
the connection is refused with the config line that would allow it.
"""

from __future__ import annotations

import asyncio
import json

from services.kernel.netgrants import EgressAsk, Grant
from services.loop.core.approvals import Decision, RequestKind, Resolution
from services.loop.core.domain import ToolCall, wait_limit
from services.loop.core.egress import EgressAsker, grant_for
from services.loop.core.ports import ToolContext
from services.loop.core.turn_events import ApprovalRequested, ApprovalResolved

NETWORK_TOOL = "network"


def network_preview(ask: EgressAsk, call: ToolCall) -> str:
    kind = "HTTPS (CONNECT)" if ask.method == "CONNECT" else f"HTTP {ask.method}"
    return (f"{call.name} wants to connect to {ask.target} ({kind}): {ask.reason}.\n"
            "y: allow it for this command · a: allow it for this session · n: refuse it\n"
            f"To allow it for good, {ask.config_hint()}.")


def network_asker(ctx: ToolContext, call: ToolCall) -> EgressAsker | None:
    """How ``call``'s sandboxed commands ask about an unlisted host; None when nobody can answer
    (the tools service then refuses such a connection at once, its 403 naming the config line)."""
    if not ctx.interactive:
        return None

    async def ask(request: EgressAsk) -> Grant:
        request_id, future = ctx.pending.open(RequestKind.APPROVAL)
        scheme = "https" if request.method == "CONNECT" else "http"
        arguments = {"host": request.host, "port": request.port, "method": request.method, "call_id": call.id,
                     "url": f"{scheme}://{request.target}"}
        ctx.emit(ApprovalRequested(request_id=request_id, call_id=call.id, tool=NETWORK_TOOL,
                                   arguments_json=json.dumps(arguments), preview=network_preview(request, call),
                                   reason=f"{call.name} wants {request.target}, not in the sandbox's allow-list"))
        wait = wait_limit(max(min(ctx.remaining(), ctx.ask_timeout_seconds), 0.01))
        try:
            resolution = await asyncio.wait_for(future, timeout=wait)
        except TimeoutError:
            ctx.pending.forget(request_id)
            resolution = Resolution(request_id, Decision.DENY, source="timeout")
        ctx.emit(ApprovalResolved(request_id=request_id, decision=resolution.decision, source=resolution.source))
        return grant_for(resolution.decision, resolution.source)

    return ask
