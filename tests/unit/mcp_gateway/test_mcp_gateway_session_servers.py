"""How long a session's editor servers live: while a client holds the session; an unheld one waits
the grace, then goes (real asyncio timers, a recording drop)."""

from __future__ import annotations

import asyncio

from services.mcp_gateway.session_servers import SessionServers


def run(body: object) -> None:
    asyncio.run(body)  # type: ignore[arg-type]


def make(grace_s: float = 60.0) -> tuple[SessionServers, list[str]]:
    dropped: list[str] = []
    table: SessionServers

    async def drop(session_id: str) -> list[str]:
        dropped.append(session_id)
        return table.forget(session_id)

    table = SessionServers(drop, grace_s=grace_s)
    return table, dropped


def test_the_last_hold_ending_drops_the_sessions_servers_and_only_those() -> None:
    async def body() -> None:
        table, dropped = make()
        table.hold("s1")
        table.hold("s1")  # two editor windows on one session
        table.added("a-1", "s1")
        table.added("b-2", "s2")
        table.hold("s2")
        table.release("s1")
        await table.settle()
        assert dropped == [] and table.owner("a-1") == "s1"
        table.release("s1")
        await asyncio.sleep(0)
        await table.settle()
        assert dropped == ["s1"] and table.owner("a-1") == "" and table.owner("b-2") == "s2"
        table.close()

    run(body())


def test_servers_nobody_holds_go_after_the_grace_and_a_hold_in_time_keeps_them() -> None:
    async def body() -> None:
        table, dropped = make(grace_s=0.05)
        table.added("a-1", "s1")
        table.added("b-2", "s2")
        table.hold("s2")  # held within the grace
        await asyncio.sleep(0.2)
        await table.settle()
        assert dropped == ["s1"] and table.names("s2") == ["b-2"]
        table.close()

    run(body())
