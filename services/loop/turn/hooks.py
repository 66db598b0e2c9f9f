"""``PassHooks``: the turn's hooks when no feature gives any (every point passes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.loop.core.ports import ToolCall, ToolOutcome, TurnHooks
from services.loop.core.turn_events import EventBody


class PassHooks:
    """A ``TurnHooks`` with no hook at any point."""

    def scoped(self) -> TurnHooks:
        return self

    async def turn_start(self, turn: int, text: str, emit: Callable[[EventBody], None]) -> None:
        return None

    async def step_before(self, turn: int, step: int, emit: Callable[[EventBody], None]) -> str:
        return ""

    async def tool_before(self, call: ToolCall, arguments: dict[str, Any], emit: Callable[[EventBody], None]
                          ) -> ToolCall | ToolOutcome:
        return call

    async def tool_after(self, call: ToolCall, outcome: ToolOutcome, emit: Callable[[EventBody], None]) -> None:
        return None

    async def turn_end(self, turn: int, status: str, text: str, emit: Callable[[EventBody], None]) -> None:
        return None

    async def stop_blocked(self, turn: int, reason: str, emit: Callable[[EventBody], None]) -> None:
        return None
