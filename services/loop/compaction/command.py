"""``/compact`` (compact a session's history now, L4 even for a small new part, and save it) and
``/budget`` (the token ledger and how full the window is)."""

from __future__ import annotations

import json
from dataclasses import asdict

from services.loop.compaction.keeper import ContextKeeper, fixed_tokens
from services.loop.core.feature import FeatureHost
from services.loop.core.turn_events import Degraded, EventBody


async def compact_command(rt: FeatureHost, keeper: ContextKeeper) -> tuple[str, str]:
    """``(text, JSON)`` of /compact; refused while a turn runs (its next step compacts when needed)."""
    if not rt.idle:
        return ("a turn is running: it compacts by itself before a step that would reach the ceiling; "
                "run /compact when it ends"), json.dumps({"error": "busy"})
    messages = rt.session.messages
    if not messages:
        return "nothing to compact yet", json.dumps({"changed": False})
    ended: list[EventBody] = []

    def emit(body: EventBody) -> None:
        ended.append(body)
        rt.events.emit(rt.session.turns, body)

    request = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")
    fixed = fixed_tokens(rt.instructions, [t.spec for t in rt.tools.visible()], 0)
    before = keeper.estimates(messages, fixed)[1]
    changed = await keeper.prepare(messages, fixed, request, rt.model, emit, rt.save, force=True)
    rt.save()
    after = keeper.last_estimate
    degraded = [b.reason for b in ended if isinstance(b, Degraded)]
    c = keeper.state.checkpoint
    text = (f"compacted ~{before} -> ~{after} tokens" if changed else "nothing changed") + (
        f" · checkpoint covers {c.consumed} of {len(messages)} messages" if c else "")
    if degraded:
        text += " · " + "; ".join(degraded)
    return text, json.dumps({"changed": changed, "before_tokens": before, "after_tokens": after,
                             "consumed": c.consumed if c else 0, "degraded": degraded})


def _cost(usage: dict[str, object]) -> str:
    """'cost $0.0123' (four places below a dollar: a step often costs a tenth of a cent), or why there is none."""
    cost = usage.get("costUsd")
    if not isinstance(cost, int | float):
        return ("cost n/a (no price for this model: set price_input_per_mtok and price_output_per_mtok in its "
                "models: entry)")
    return f"cost ${cost:.4f}" if cost < 1 else f"cost ${cost:.2f}"


def budget_command(rt: FeatureHost, keeper: ContextKeeper) -> tuple[str, str]:
    """The session's token ledger, saying which of four states it is in."""
    usage, limit = rt.session.usage, rt.settings.turn_token_budget
    total = int(usage.get("totalTokens", 0) or 0)
    if not rt.deps.traces:
        state, text = "tracing_off", f"tracing is off (loop.traces: false); tokens counted anyway: {total}"
    elif rt.session.turns == 0:
        state, text = "no_turn", "no turn has run in this session yet"
    elif total == 0:
        state, text = "no_usage", (f"{rt.session.turns} turn(s) ran but the model reported no token usage "
                                   "(its endpoint sends none)")
    else:
        state, text = "usage", (f"session tokens: {total} (prompt {usage.get('promptTokens', 0)} · "
                                f"completion {usage.get('completionTokens', 0)}) · {_cost(usage)}")
    if state in ("no_usage", "usage"):
        text += f" · turn budget: {limit or 'unlimited'}"
    if rt.idle:  # between turns: the next request's size from the record (a resumed session has no step yet)
        keeper.estimates(rt.session.messages, fixed_tokens(rt.instructions, [t.spec for t in rt.tools.visible()], 0))
    fill = keeper.fill()
    text += (f"\ncontext: ~{fill.used} tokens used / {fill.ceiling} compaction threshold / {fill.window} window"
             f" · {keeper.state.compactions} compactions")
    return text, json.dumps({"state": state, "usage": usage, "turns": rt.session.turns, "turn_token_budget": limit,
                             "context": asdict(fill), "compactions": keeper.state.compactions})
