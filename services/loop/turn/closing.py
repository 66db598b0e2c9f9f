"""How a turn ends: its one turn_finished event, the save that makes it durable, the journal fold
after; and the reason a client is shown."""

from __future__ import annotations

import asyncio

from services.loop.core.ports import TurnContext
from services.loop.core.turn_events import TurnFinished
from services.loop.policy.turn import VERIFIED, Status
from services.loop.policy.turn import Decision as TurnDecision


def close_turn(ctx: TurnContext, number: int, finished: TurnFinished) -> None:
    """End turn ``number``: its one turn_finished event, the save that makes it durable, and the
    journal fold once the clients had the event (a user turn and a /plan run both end here)."""
    ctx.emit(number, finished)
    ctx.save()
    # Folding the journal and rewriting the summaries waits until the clients have had the
    # turn_finished event (the journal record just written already makes the turn durable).
    asyncio.get_running_loop().call_soon(ctx.end_of_turn)


def shown_reason(decision: TurnDecision) -> str:
    """The reason a client sees: none for a plain completion; "acceptance verified" is one it shows."""
    if decision.status is Status.COMPLETED and not decision.reason.startswith(VERIFIED):
        return ""
    return decision.reason
