"""The grant book of the egress proxy: an ask waits for its own session's answer, "session" grants
last until the session is forgotten, and an unanswered or orphaned ask is a refusal."""

from __future__ import annotations

import asyncio

from services.kernel.netgrants import EgressAsk, Grant, GrantScope
from services.loop.core.approvals import Decision
from services.loop.core.egress import grant_for
from services.tools.egress.grants import Grants


def test_only_the_asking_session_can_answer_and_an_answer_counts_once() -> None:
    async def scenario() -> tuple[Grant, list[bool]]:
        book, delivered = Grants(), asyncio.Queue[EgressAsk]()
        waiting = asyncio.ensure_future(book.ask("s1", delivered.put, "a.test", 443, "CONNECT", "why", "a.test"))
        ask = await delivered.get()
        applied = [book.answer("s2", ask.ask_id, Grant(GrantScope.SESSION)),
                   book.answer("s1", ask.ask_id, Grant(GrantScope.ONCE))]
        grant = await waiting
        applied.append(book.answer("s1", ask.ask_id, Grant(GrantScope.SESSION)))
        return grant, applied

    grant, applied = asyncio.run(scenario())
    assert grant == Grant(GrantScope.ONCE) and applied == [False, True, False]


def test_no_answer_in_time_and_a_closed_session_refuse_and_session_grants_end_with_it() -> None:
    async def scenario() -> tuple[Grant, Grant, bool, bool]:
        book = Grants(wait_seconds=0.05)

        async def drop(ask: EgressAsk) -> None:
            return None

        late = await book.ask("s1", drop, "a.test", 80, "GET", "why", "a.test")
        book.wait_seconds = 30
        waiting = asyncio.ensure_future(book.ask("s1", drop, "b.test", 80, "GET", "why", "b.test"))
        await asyncio.sleep(0.01)
        book.remember("s1", "c.test", 443)
        had = book.granted("s1", "c.test", 443)
        book.forget("s1")
        return late, await waiting, had, book.granted("s1", "c.test", 443)

    late, closed, had, still = asyncio.run(scenario())
    assert late.scope is GrantScope.DENY and "nobody answered" in late.reason
    assert closed == Grant(GrantScope.DENY, "the session closed")
    assert had and not still


def test_what_each_approval_answer_grants() -> None:
    assert grant_for(Decision.ALLOW_ONCE, "user") == Grant(GrantScope.ONCE)
    assert grant_for(Decision.ALLOW_ALWAYS, "user") == Grant(GrantScope.SESSION)
    assert grant_for(Decision.DENY, "user") == Grant(GrantScope.DENY, "the user refused it")
    assert grant_for(Decision.STOP, "user").scope is GrantScope.DENY
    assert grant_for(Decision.DENY, "timeout") == Grant(GrantScope.DENY, "not approved (timeout)")
