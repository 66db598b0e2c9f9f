"""``/compact``: compact a session's history now (L4 even for a small new part) and save it."""

from __future__ import annotations

import json
from typing import Protocol

from services.loop.compaction.keeper import ContextKeeper, fixed_tokens
from services.loop.core.events import EventLog
from services.loop.core.ports import ModelClient, ToolIndex
from services.loop.core.sessions import Session
from services.loop.core.turn_events import Degraded, EventBody


class CompactHost(Protocol):
    """What /compact reads of its session (the session runtime is one)."""

    @property
    def idle(self) -> bool: ...
    @property
    def session(self) -> Session: ...
    @property
    def context(self) -> ContextKeeper: ...
    @property
    def events(self) -> EventLog: ...
    @property
    def instructions(self) -> str: ...
    @property
    def tools(self) -> ToolIndex: ...
    @property
    def model(self) -> ModelClient: ...

    def save(self) -> None: ...


async def compact_command(rt: CompactHost) -> tuple[str, str]:
    """``(text, JSON)`` of /compact; refused while a turn runs (its next step compacts when needed)."""
    if not rt.idle:
        return ("a turn is running: it compacts by itself before a step that would reach the ceiling; "
                "run /compact when it ends"), json.dumps({"error": "busy"})
    messages = rt.session.messages
    if not messages:
        return "nothing to compact yet", json.dumps({"changed": False})
    keeper = rt.context
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
