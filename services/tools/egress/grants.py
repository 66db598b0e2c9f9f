"""The user's answers for hosts the allow-list does not name: "allow once", "for this session", deny.

A command's connection to an unlisted host (no deny rule, an address the policy accepts) is held
while the caller of its tool call (the loop) asks the user; the caller answers with the
``GrantEgress`` RPC. "Once" opens that host:port for the rest of that command; "session" for every
command of the session until it closes. Nobody to ask (no caller that answers, a headless run, no
answer in time) is a refusal. A grant never reaches past the deny list or the address policy: the
proxy checks both before it asks, and a grant only ever stands for an unlisted name.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

from services.kernel.ids import new_id
from services.kernel.netgrants import EgressAsk, Grant, GrantScope

# The longest a held connection waits for the user's answer (the command's own timeout also ends it).
ANSWER_WAIT_S = 300.0


Deliver = Callable[[EgressAsk], Awaitable[None]]
"""Puts an ask on the tool call's stream (the servicer's; None when the caller answers no asks)."""
ASK_USER: ContextVar[Deliver | None] = ContextVar("ai_coding_egress_ask_user", default=None)
"""How the tool call running in this context asks about an unlisted host (set per call by the servicer)."""


@dataclass
class Grants:
    """The service's pending asks and each session's granted hosts."""

    wait_seconds: float = ANSWER_WAIT_S
    session: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    pending: dict[str, tuple[str, asyncio.Future[Grant]]] = field(default_factory=dict)

    def granted(self, session_id: str, host: str, port: int) -> bool:
        return (host, port) in self.session.get(session_id, ())

    async def ask(self, session_id: str, deliver: Deliver, host: str, port: int, method: str, reason: str,
                  allow_line: str) -> Grant:
        """Deliver one ask and wait for its answer (a refusal when none comes in time)."""
        ask = EgressAsk(f"egress-{new_id()}", host, port, method, reason, allow_line)
        future: asyncio.Future[Grant] = asyncio.get_running_loop().create_future()
        self.pending[ask.ask_id] = (session_id, future)
        try:
            await deliver(ask)
            return await asyncio.wait_for(future, self.wait_seconds)
        except TimeoutError:
            return Grant(GrantScope.DENY, f"nobody answered within {self.wait_seconds:g} s")
        finally:
            self.pending.pop(ask.ask_id, None)

    def answer(self, session_id: str, ask_id: str, grant: Grant) -> bool:
        """Settle a pending ask of ``session_id``; False when there is none (answered, timed out, or
        another session's: one session can never answer for another)."""
        entry = self.pending.get(ask_id)
        if entry is None or entry[0] != session_id or entry[1].done():
            return False
        entry[1].set_result(grant)
        return True

    def remember(self, session_id: str, host: str, port: int) -> None:
        self.session.setdefault(session_id, set()).add((host, port))

    def forget(self, session_id: str) -> None:
        """The session closed: its grants end, its pending asks are refused."""
        self.session.pop(session_id, None)
        for ask_id, (owner, future) in list(self.pending.items()):
            if owner == session_id and not future.done():
                with contextlib.suppress(asyncio.InvalidStateError):
                    future.set_result(Grant(GrantScope.DENY, "the session closed"))
                self.pending.pop(ask_id, None)
