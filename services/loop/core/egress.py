"""How the loop answers a sandboxed command's connection to a host the allow-list does not name
(services/kernel/netgrants.py has the data): ``grant_for`` is the one place that says what an
approval decision grants."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from services.kernel.netgrants import EgressAsk, Grant, GrantScope
from services.loop.core.approvals import Decision

EgressAsker = Callable[[EgressAsk], Awaitable[Grant]]
"""Answers a held connection (the dispatcher's, per call); None where nobody can be asked."""


def grant_for(decision: Decision, source: str) -> Grant:
    """What an approval answer grants: once = this command, always = this session; anything else
    (deny, stop, a timeout, the turn's end) refuses, saying who decided."""
    if decision is Decision.ALLOW_ONCE:
        return Grant(GrantScope.ONCE)
    if decision is Decision.ALLOW_ALWAYS:
        return Grant(GrantScope.SESSION)
    return Grant(GrantScope.DENY, "the user refused it" if source == "user" else f"not approved ({source})")
