"""The layers that need no model: L3 (persist), L1 (snip), L2 (envelopes) and the fallback trim.

Each is a pure function ``(Inputs, CompactionState) -> (CompactionState, LayerStat | None)``
over the record; the only effect is writing bodies under transcripts/ (written
before the state that refers to them exists, so a crash leaves at worst an
unreferenced file).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from services.loop.compaction.settings import Budget, CompactionSettings
from services.loop.compaction.state import (
    CompactionState,
    Digests,
    Omission,
    Overlay,
    view_message,
    visible_indices,
)
from services.loop.compaction.tokens import history_tokens, message_tokens
from services.loop.compaction.transcripts import Transcripts
from services.loop.core.turn_events import LayerStat

Message = dict[str, Any]


@dataclass(frozen=True)
class Inputs:
    """What every layer reads."""

    messages: list[Message]
    """The session's record (never modified)."""
    session_id: str
    budget: Budget
    settings: CompactionSettings
    transcripts: Transcripts
    fixed_tokens: int = 0
    """Tokens of the request outside the history (instructions, tools, tail)."""
    pinned: int = -1
    """Index of the current user request: never hidden, whatever is compacted."""

    digests: Digests = field(default_factory=Digests, compare=False, repr=False)
    """The session's digest memo (the keeper's), so an unchanged message is hashed once per session."""

    _cache: dict[int, int] = field(default_factory=dict, compare=False, repr=False)
    _overlaid: dict[int, tuple[Overlay, int]] = field(default_factory=dict, compare=False, repr=False)

    def message_tokens(self, index: int, state: CompactionState) -> int:
        """Tokens of record message ``index`` as the view shows it (each size is computed once)."""
        overlay = state.overlays.get(index)
        if overlay is not None:
            hit = self._overlaid.get(index)
            if hit is None or hit[0] is not overlay:
                hit = self._overlaid[index] = (overlay, message_tokens(
                    view_message(self.messages, index, state, self.digests)))
            return hit[1]
        cached = self._cache.get(index)
        if cached is None:
            cached = self._cache[index] = message_tokens(self.messages[index])
        return cached

    def raw_tokens(self, index: int) -> int:
        """Tokens of record message ``index`` as recorded (computed once)."""
        cached = self._cache.get(index)
        if cached is None:
            cached = self._cache[index] = message_tokens(self.messages[index])
        return cached

    def tokens(self, state: CompactionState) -> int:
        """Estimated tokens of the request this state gives (the same figure as the built view's)."""
        total = self.fixed_tokens + sum(self.message_tokens(i, state)
                                        for i in visible_indices(len(self.messages), state))
        markers = [o.marker() for o in state.omissions if o.end > state.consumed]
        if state.checkpoint is not None:
            markers.append(state.checkpoint.note())
        return total + history_tokens(markers)

    def view_length(self, state: CompactionState) -> int:
        """How many messages the view has."""
        return (len(visible_indices(len(self.messages), state)) + (state.checkpoint is not None)
                + sum(1 for o in state.omissions if o.end > state.consumed))


def is_boundary(messages: list[Message], index: int) -> bool:
    """True when a cut before ``index`` separates no call from its results."""
    return index >= len(messages) or messages[index].get("role") != "tool"


def next_boundary(messages: list[Message], index: int) -> int:
    while not is_boundary(messages, index):
        index += 1
    return index


def previous_boundary(messages: list[Message], index: int) -> int:
    while index > 0 and not is_boundary(messages, index):
        index -= 1
    return index


def last_exchange(messages: list[Message]) -> int:
    """Start of the newest exchange (the last non-tool message: an answer, or a call and its results)."""
    return previous_boundary(messages, len(messages) - 1) if messages else 0


# ---- L3 ----------------------------------------------------------------------------------------------


def persisted_placeholder(path: str, body: str, window: int) -> str:
    head, tail = body[:window], body[-window:] if len(body) > 2 * window else ""
    shown = f"{head}\n[...]\n{tail}" if tail else head
    return (f"<persisted-output path=\"{path}\" chars=\"{len(body)}\">\nThe full output was saved to {path} "
            f"(read it in parts, or history_search). Start and end:\n{shown}\n</persisted-output>")


def l3_persist(inp: Inputs, state: CompactionState) -> tuple[CompactionState, LayerStat]:
    """Mid-turn guard: only the trailing batch of tool results, only when it is over half the window,
    and only its results over ``per_result_persist_bytes``."""
    messages, s = inp.messages, inp.settings
    start = len(messages)
    while start > state.consumed and messages[start - 1].get("role") == "tool":
        start -= 1
    batch = [i for i in range(start, len(messages)) if i not in state.overlays]
    sizes = {i: len(str(messages[i].get("content") or "").encode("utf-8", "surrogatepass")) for i in batch}
    if not batch or sum(sizes.values()) // 4 <= inp.budget.window // 2:
        return state, LayerStat("L3", skipped=len(batch))
    overlays = dict(state.overlays)
    rewritten = 0
    for i in batch:
        if sizes[i] <= s.per_result_persist_bytes:
            continue
        body = str(messages[i].get("content") or "")
        path = inp.transcripts.persist(body)
        overlays[i] = Overlay("L3", inp.digests.of(messages, i), persisted_placeholder(path, body, s.l2_window_chars))
        rewritten += 1
    return replace(state, overlays=overlays), LayerStat("L3", rewritten=rewritten, skipped=len(batch) - rewritten)


# ---- omissions (L1, fallback) --------------------------------------------------------------------------


def omit(inp: Inputs, state: CompactionState, start: int, end: int, kind: str) -> tuple[CompactionState, int]:
    """Hide ``messages[start:end]`` (boundaries) except the pinned request, merged with the omissions it
    touches; archived first. Returns the new state and how many messages became hidden."""
    if end <= start:
        return state, 0
    pieces = [(start, end)]
    if start <= inp.pinned < end:
        pieces = [(start, inp.pinned), (inp.pinned + 1, end)]
    kept = list(state.omissions)
    added = 0
    for lo, hi in pieces:
        if hi <= lo:
            continue
        touching = [o for o in kept if o.start <= hi and o.end >= lo]
        merged_lo = min([lo, *(o.start for o in touching)])
        merged_hi = max([hi, *(o.end for o in touching)])
        merged_kind = "overflow" if kind == "overflow" or any(o.kind == "overflow" for o in touching) else kind
        already = sum(o.end - o.start for o in touching)
        inp.transcripts.archive(inp.session_id, inp.messages, range(merged_lo, merged_hi))
        kept = [o for o in kept if o not in touching] + [Omission(merged_lo, merged_hi, merged_kind)]
        added += (merged_hi - merged_lo) - already
    kept.sort(key=lambda o: o.start)
    overlays = {i: o for i, o in state.overlays.items() if not any(x.start <= i < x.end for x in kept)}
    return replace(state, omissions=tuple(kept), overlays=overlays), added


# ---- L1 ----------------------------------------------------------------------------------------------


def l1_snip(inp: Inputs, state: CompactionState) -> tuple[CompactionState, LayerStat | None]:
    """Over ``max_messages`` in view, hide the middle, keeping ``snip_keep_head`` / ``snip_keep_tail``.
    Not when a checkpoint exists: then the head is the checkpoint and the tail the record's true suffix."""
    s = inp.settings
    if state.checkpoint is not None:
        return state, None
    visible = visible_indices(len(inp.messages), state)
    if len(visible) <= s.max_messages:
        return state, LayerStat("L1")
    messages = inp.messages
    start = next_boundary(messages, visible[s.snip_keep_head])
    end = previous_boundary(messages, visible[len(visible) - s.snip_keep_tail])
    if end <= start:
        end = next_boundary(messages, visible[len(visible) - s.snip_keep_tail])
    new, _ = omit(inp, state, start, end, "snipped")
    return new, LayerStat("L1")


# ---- L2 ----------------------------------------------------------------------------------------------


def envelope(path: str, body: str, window: int) -> str:
    """The view of an old tool result: what was cleared, where it is, and its first and last characters."""
    line = f"[elided: {len(body)} chars cleared; the full output is in {path}]"
    if window <= 0:
        return line
    half = window // 2
    if len(body) <= window:
        return f"{line}\n{body}"
    return f"{line}\n{body[:half]}\n[...]\n{body[-half:]}"


def recent_kept(inp: Inputs, tools: list[int]) -> int:
    """How many of the newest tool results (``tools``: record indices, oldest first) stay verbatim: at
    most ``keep_recent_tool_results``, together at most ``budget.recent_tools`` tokens, the newest always."""
    kept = total = 0
    for i in reversed(tools):
        size = inp.raw_tokens(i)
        if kept >= inp.settings.keep_recent_tool_results or (kept and total + size > inp.budget.recent_tools):
            break
        kept, total = kept + 1, total + size
    return kept


def envelope_floor(s: CompactionSettings) -> int:
    """Characters a tool result must exceed for its envelope to be shorter than it (roughly)."""
    return 2 * s.l2_window_chars + 200


def stale_tool_tokens(inp: Inputs, state: CompactionState) -> int:
    """Tokens of verbatim tool results in view older than the ones kept recent: what an L2 pass would
    envelope now. Scans back from the newest message and stops past the budget (the answer is then
    "more than it") or at a result already enveloped (older ones were seen by that pass)."""
    messages, limit = inp.messages, inp.budget.recent_tools
    shorter = envelope_floor(inp.settings)  # a body this short stays as it is (no envelope)
    kept = total = stale = 0
    lowest = max(state.consumed, len(messages) - inp.settings.max_messages)  # past that, L1's business
    for i in range(len(messages) - 1, lowest - 1, -1):
        if messages[i].get("role") != "tool" or any(o.start <= i < o.end for o in state.omissions):
            continue
        overlay = state.overlays.get(i)
        if overlay is not None and overlay.layer == "L2":
            break
        size = inp.raw_tokens(i)
        if kept < inp.settings.keep_recent_tool_results and (not kept or total + size <= limit):
            kept, total = kept + 1, total + size
            continue
        kept = inp.settings.keep_recent_tool_results  # past the recent ones: everything older is stale
        if overlay is None and len(str(messages[i].get("content") or "")) > shorter:
            stale += size
            if stale > limit:
                break
    return stale


def l2_envelopes(inp: Inputs, state: CompactionState) -> tuple[CompactionState, LayerStat]:
    """Tool results older than the newest ones kept (``recent_kept``) become envelopes; their windows
    share ``l2_window_budget``, newest first. Bodies shorter than their envelope stay."""
    s, messages = inp.settings, inp.messages
    tools = [i for i in visible_indices(len(messages), state) if messages[i].get("role") == "tool"]
    older = tools[: len(tools) - recent_kept(inp, tools)]
    overlays = {i: o for i, o in state.overlays.items() if o.layer != "L2" or i in older}
    budget = s.l2_window_budget
    rewritten = skipped = 0
    for i in reversed(older):
        if i in overlays and overlays[i].layer == "L3":
            skipped += 1
            continue
        body = str(messages[i].get("content") or "")
        window = min(2 * s.l2_window_chars, budget)
        probe = envelope("." * 80, body, window)
        if len(body) <= len(probe):
            overlays.pop(i, None)
            skipped += 1
            continue
        budget -= min(window, len(body))
        text = envelope(inp.transcripts.elide(body), body, window)
        previous = state.overlays.get(i)
        if previous is None or previous.content != text:
            rewritten += 1
        overlays[i] = Overlay("L2", inp.digests.of(messages, i), text)
    # history_search finds an elided output by its words, as it finds an archived message (the
    # archive appends each message once).
    inp.transcripts.archive(inp.session_id, messages, [i for i, o in overlays.items() if o.layer == "L2"])
    return replace(state, overlays=overlays), LayerStat("L2", rewritten=rewritten, skipped=skipped)


# ---- fallback ----------------------------------------------------------------------------------------


def hard_trim(inp: Inputs, state: CompactionState, goal: int) -> tuple[CompactionState, LayerStat | None]:
    """Hide the oldest visible messages until the request is at most ``goal`` tokens. Always kept: the
    checkpoint note, the pinned request and the newest exchange. What it hides is archived and the view
    says so (``[context overflow] N messages omitted; use history_search``)."""
    messages = inp.messages
    before = inp.tokens(state)
    if before <= goal:
        return state, None
    limit = last_exchange(messages)
    visible = [i for i in visible_indices(len(messages), state) if i < limit and i != inp.pinned]
    if not visible:
        return state, None
    excess = before - goal + 40  # the marker's own size
    freed, end = 0, visible[0]
    for i in visible:
        if freed >= excess:
            break
        freed += inp.message_tokens(i, state)
        end = i + 1
    end = min(next_boundary(messages, end), limit)
    new, hidden = omit(inp, state, visible[0], end, "overflow")
    return (new, LayerStat("fallback")) if hidden else (state, None)
