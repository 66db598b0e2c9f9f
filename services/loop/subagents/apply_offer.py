"""``subagent_apply`` is offered from the moment a child leaves changes to apply: the packet (a tool
result, or a background run's end) tells the model to call it, so it must be in the tools of that
request (it is deferred until then: most turns never have a child with changes)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from services.loop.subagents.manager import RunRecord
from services.loop.subagents.packet import SubagentPacket

APPLY_TOOL = "subagent_apply"


class OfferApply:
    """A :class:`~services.loop.subagents.manager.SubagentHook` loading ``subagent_apply`` into the
    parent's tools once a run ends with a worktree of changes."""

    def __init__(self, load: Callable[[Iterable[str]], None]) -> None:
        self._load = load

    def before_start(self, run: RunRecord) -> str | None:
        return None

    def after_end(self, run: RunRecord, packet: SubagentPacket) -> None:
        if packet.worktree:
            self._load([APPLY_TOOL])
