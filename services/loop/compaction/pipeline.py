"""The compaction pipeline: L3 -> L1 -> L2 -> L4, then the fallback trim (the order is an invariant).

``compact`` runs over the record without changing it and returns the new
state; the caller saves it and builds every later request from it
(``build_view``), so the request never swings back to the full history.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from services.loop.compaction.layers import Inputs, hard_trim, l1_snip, l2_envelopes, l3_persist
from services.loop.compaction.state import CompactionState, build_view
from services.loop.compaction.summary import l4_summarize
from services.loop.core.pairing import is_paired
from services.loop.core.ports import ModelClient
from services.loop.core.turn_events import LayerStat

LAYER_ORDER = ("L3", "L1", "L2", "L4", "fallback")


@dataclass(frozen=True)
class Outcome:
    """What one compaction did."""

    state: CompactionState
    layers: tuple[LayerStat, ...]
    before_tokens: int
    after_tokens: int
    degraded: tuple[str, ...] = ()
    """Why a part degraded (summary failed, breaker open, history rewritten): one Degraded event each."""

    @property
    def changed(self) -> bool:
        """Judged by content: did the view change (not: did the message count)."""
        return self.after_tokens != self.before_tokens or any(s.rewritten or s.removed for s in self.layers)


async def compact(inp: Inputs, state: CompactionState, model: ModelClient | None, *, force: bool = False,
                  hard: bool = False, light: bool = False) -> Outcome:
    """Run the layers in order over ``inp.messages``.

    ``force`` (/compact): L4 summarizes even a small new part. ``hard`` (after a context_length error):
    the fallback trims to the target even when the estimate says the request fits. ``light`` (older
    tool output past the recent budget, the request under the ceiling): L3, L1 and L2 only.
    """
    budget = inp.budget
    before = inp.tokens(state)
    stats: list[LayerStat] = []
    degraded: list[str] = []
    current = state

    def record(name_state: tuple[CompactionState, LayerStat | None], previous: CompactionState) -> CompactionState:
        new, stat = name_state
        if stat is not None:
            stats.append(replace(stat, removed=max(inp.view_length(previous) - inp.view_length(new), 0),
                                 before_tokens=inp.tokens(previous), after_tokens=inp.tokens(new)))
        return new

    current = record(l3_persist(inp, current), current)
    current = record(l1_snip(inp, current), current)
    current = record(l2_envelopes(inp, current), current)
    if not light and (force or inp.tokens(current) > budget.target):
        new, stat, why = await l4_summarize(inp, current, model, force=force)
        if why:
            degraded.append(why)
        current = record((new, stat), current)
    # Over the ceiling still (no summary, a failed one, the breaker open) or refused by the model: trim
    # down to the target, not just under the ceiling, or every following step would trim again.
    if not light and (hard or inp.tokens(current) >= budget.ceiling):
        current = record(hard_trim(inp, current, budget.target), current)
    view = build_view(inp.messages, current, inp.digests)
    if not is_paired(view):  # the layers cut on boundaries; this only guards against a bug
        raise AssertionError("compaction produced an unpaired view")
    after = inp.tokens(current)
    if after != before or current.checkpoint != state.checkpoint:
        current = replace(current, compactions=current.compactions + 1)
    return Outcome(current, tuple(stats), before, after, tuple(degraded))
