"""L4: a real model summary of what the view no longer carries, into the checkpoint.

Incremental: only ``messages[consumed:cut]`` is summarized, with the previous
summary passed as ``<previous-checkpoint>``; the cut is a message index (never
a guess by length). The input is cut into chunks at message boundaries (a
message longer than a chunk is split) and folded in one after another, never
truncated. What L4 consumes is archived before the model is asked, so
history_search can always find it. A failure advances nothing: the state
comes back unchanged but for the failure count (the circuit breaker).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from services.loop.compaction.layers import Inputs, last_exchange, next_boundary, previous_boundary
from services.loop.compaction.state import (
    Checkpoint,
    CompactionState,
    chain_anchor,
    view_message,
    visible_indices,
)
from services.loop.compaction.tokens import message_tokens, text_bytes, tokens_of_bytes
from services.loop.compaction.transcripts import message_text
from services.loop.core.errors import LoopError
from services.loop.core.ports import ModelClient, ModelError
from services.loop.core.turn_events import LayerStat

Message = dict[str, Any]

# The marker a summary request's last message carries (a scripted fake model matches on it).
SUMMARY_MARKER = "[compaction-request]"
SUMMARY_INSTRUCTIONS = """\
You write the checkpoint of a coding agent's conversation: the agent will continue from your text alone,
without the messages it replaces. Keep, in this order and in short lines:
- the user's goal and every explicit instruction or constraint, quoted verbatim;
- decisions taken and why; files created or changed (paths) and what changed;
- facts established (test results, errors with their key line, values found);
- what is still open or failing, and the next step.
Drop chit-chat and raw output already acted on. Merge the previous checkpoint with the new messages into one
updated checkpoint; never lose an item of the previous checkpoint that is still true. At most 400 words."""
# Room kept in a summary request besides its chunk: instructions, previous summary, the reply.
SUMMARY_OVERHEAD_TOKENS = 1500


class SummaryFailed(LoopError):
    """The summary could not be written (model error, empty answer, time budget)."""

    reason = "summary_failed"


def render(message: Message) -> str:
    """One message as summary input."""
    role = str(message.get("role", ""))
    return f"<{role}>\n{message_text(message)}\n</{role}>"


def chunks(texts: list[str], limit_chars: int) -> list[str]:
    """Group rendered messages into chunks of at most ``limit_chars``; a longer message is split."""
    out: list[str] = []
    current = ""
    for text in texts:
        while len(text) > limit_chars:
            if current:
                out.append(current)
                current = ""
            out.append(text[:limit_chars])
            text = text[limit_chars:]
        if current and len(current) + len(text) + 1 > limit_chars:
            out.append(current)
            current = ""
        current = f"{current}\n{text}" if current else text
    if current:
        out.append(current)
    return out


def summary_request(previous: str, chunk: str) -> list[Message]:
    """The messages of one summary step."""
    user = (f"<previous-checkpoint>\n{previous.strip() or '(none yet)'}\n</previous-checkpoint>\n\n"
            f"<new-messages>\n{chunk}\n</new-messages>\n\n{SUMMARY_MARKER} Write the updated checkpoint now.")
    return [{"role": "system", "content": SUMMARY_INSTRUCTIONS}, {"role": "user", "content": user}]


async def summarize(model: ModelClient, previous: str, texts: list[str], limit_chars: int,
                    timeout_seconds: float) -> str:
    """Fold ``texts`` into ``previous`` chunk by chunk; raises SummaryFailed."""
    summary = previous
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_seconds
    for chunk in chunks(texts, limit_chars):
        left = deadline - loop.time()
        if left <= 0:
            raise SummaryFailed(f"the summary ran past its {timeout_seconds:g}s budget")
        try:
            async with asyncio.timeout(left):
                step = await model.step(summary_request(summary, chunk), [], on_text=_ignore, on_reasoning=_ignore,
                                        timeout_seconds=left)
        except TimeoutError:
            raise SummaryFailed(f"the summary ran past its {timeout_seconds:g}s budget") from None
        except ModelError as err:
            if err.reason == "timeout":  # the step's own clock is this budget's remainder: the same deadline
                raise SummaryFailed(f"the summary ran past its {timeout_seconds:g}s budget") from None
            raise SummaryFailed(f"model {err.reason}: {err.message}") from None
        if not step.text.strip():
            raise SummaryFailed("the model returned an empty summary")
        summary = step.text.strip()
    return summary


def _ignore(_: str) -> None:
    pass


def choose_cut(inp: Inputs, state: CompactionState, note_tokens: int, *, force: bool = False) -> int:
    """The first index the view keeps verbatim after this summary: the newest messages that fit in the
    target (at least the newest exchange; only that when ``force``), on a boundary. ``<= consumed``
    means nothing to summarize."""
    messages = inp.messages
    keep_budget = 0 if force else inp.budget.target - inp.fixed_tokens - note_tokens
    visible = visible_indices(len(messages), state)
    minimum = last_exchange(messages)
    cut = len(messages)
    kept = 0
    for i in reversed(visible):
        kept += inp.message_tokens(i, state)
        if kept > keep_budget and i < minimum:
            break
        cut = i
    if not visible:
        return state.consumed
    back = previous_boundary(messages, cut)
    return back if back > state.consumed else next_boundary(messages, cut)


async def l4_summarize(inp: Inputs, state: CompactionState, model: ModelClient | None, *,
                       force: bool) -> tuple[CompactionState, LayerStat | None, str]:
    """``(state, stat, degraded reason)``; the stat is None when L4 did not run."""
    s = inp.settings
    if model is None:
        return state, None, ""
    if state.failures >= s.breaker_failures:
        return state, None, f"summary circuit breaker open after {state.failures} failures; trimming instead"
    previous = state.checkpoint.summary if state.checkpoint else ""
    cut = choose_cut(inp, state, tokens_of_bytes(text_bytes(previous)) + 200, force=force)
    if cut <= state.consumed:
        return state, None, ""
    messages = inp.messages
    delta = [view_message(messages, i, state, inp.digests) for i in range(state.consumed, cut)]
    delta_tokens = sum(message_tokens(m) for m in delta)
    if delta_tokens < inp.budget.summary_delta and not force:
        return state, None, ""  # the new part is small: carried verbatim, no model call
    inp.transcripts.archive(inp.session_id, messages, range(state.consumed, cut))
    limit_chars = max((inp.budget.ceiling - SUMMARY_OVERHEAD_TOKENS) * 3, 4000)
    try:
        summary = await summarize(model, previous, [render(m) for m in delta], limit_chars, s.summary_timeout_seconds)
    except SummaryFailed as err:
        return replace(state, failures=state.failures + 1), None, f"summary failed ({err}); trimming instead"
    summary, cut_note = cap_summary(summary, inp.budget.target)
    old = state.checkpoint
    pinned = str(messages[inp.pinned].get("content") or "") if 0 <= inp.pinned < cut else ""
    if not pinned and old is not None and old.request and inp.pinned < state.consumed:
        pinned = old.request
    checkpoint = Checkpoint(
        summary=summary, consumed=cut, anchor=chain_anchor(old.anchor if old else "", messages[state.consumed:cut]),
        marks=(*(old.marks if old else ()), cut), request=pinned)
    overlays = {i: o for i, o in state.overlays.items() if i >= cut}
    omissions = tuple(o if o.start >= cut else replace(o, start=cut) for o in state.omissions if o.end > cut)
    new = replace(state, checkpoint=checkpoint, overlays=overlays, omissions=omissions, failures=0)
    return new, LayerStat("L4"), cut_note


def summary_cap_chars(target_tokens: int) -> int:
    """The longest summary kept: a quarter of the compaction target (~4 characters a token)."""
    return max(2000, target_tokens)


def cap_summary(summary: str, target_tokens: int) -> tuple[str, str]:
    """``(summary cut to its cap, degraded reason or "")``: an endpoint that ignores ``max_tokens``
    must not store a checkpoint bigger than the window (a 300 KB one wedged every later turn)."""
    cap = summary_cap_chars(target_tokens)
    if len(summary) <= cap:
        return summary, ""
    kept = summary[:cap] + f"\n[summary cut at {cap:,} of {len(summary):,} characters]"
    return kept, (f"the summary came back {len(summary):,} characters, over the {cap:,} kept (the endpoint may "
                  "ignore max_tokens); only its start is stored")
