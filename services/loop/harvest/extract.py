"""After a turn: extract durable notes from its new messages and send them to memory.

One model call with the memory package's extractor prompt and its single
tolerant parser (services/memory/harvest.py, pure), then ``Memory.Reconcile``.
It runs after the turn's final event, within its own time budget, and never
fails or delays a turn: errors are logged and the cursor stays put so the
messages are offered again after the next turn.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict
from typing import Any

from services.loop.core.errors import AuxiliaryError
from services.loop.core.ports import MemoryClient, Message, ModelClient, ModelError

log = logging.getLogger("ai_coding.loop")

# The excerpt the extractor reads: tool output is cut hard (it is evidence, not
# knowledge) and the whole excerpt is bounded so one huge turn cannot cost a fortune.
TOOL_PREVIEW_CHARS = 400
EXCERPT_CHARS = 12_000


def render_excerpt(messages: list[Message]) -> str:
    """``role: text`` lines of a turn's messages, tool results cut short."""
    lines: list[str] = []
    for message in messages:
        role = str(message.get("role", ""))
        text = str(message.get("content") or "")
        if role == "tool":
            text = text[:TOOL_PREVIEW_CHARS]
        for call in message.get("tool_calls") or ():
            fn = call.get("function", {})
            text += f"\n[calls {fn.get('name', '')} {str(fn.get('arguments', ''))[:200]}]"
        if text.strip():
            lines.append(f"{role}: {text.strip()}")
    excerpt = "\n".join(lines)
    return excerpt[-EXCERPT_CHARS:]


def evidence_of(messages: list[Message]) -> str:
    """``tool`` when a tool call in these messages succeeded, else ``model`` (spec: note evidence)."""
    return "tool" if any(m.get("role") == "tool" and m.get("_ok") for m in messages) else "model"


async def harvest(model: ModelClient, memory: MemoryClient, workspace: str, session_id: str,
                  messages: list[Message], start: int, timeout_seconds: float) -> int:
    """Extract and reconcile notes from ``messages[start:]``; returns how many candidates were sent."""
    from services.memory.harvest import extractor_prompt, parse_candidates

    new = messages[start:]
    excerpt = render_excerpt(new)
    if not excerpt:
        return 0
    async with asyncio.timeout(timeout_seconds):
        existing = await memory.existing_notes(workspace, 40, timeout_seconds)
        request = [{"role": "system", "content": extractor_prompt(existing)},
                   {"role": "user", "content": excerpt}]
        step = await model.step(request, [], on_text=lambda _: None, on_reasoning=lambda _: None,
                                timeout_seconds=timeout_seconds)
        candidates = parse_candidates(step.text)
        if not candidates:
            return 0
        evidence = evidence_of(new)
        payload: list[dict[str, Any]] = []
        for candidate in candidates:
            item = asdict(candidate)
            item["action"] = int(candidate.action.value)  # the proto's ReconcileAction numbers
            item["evidence"] = item.get("evidence") or evidence
            item["source_message_ids"] = [f"{session_id}:{i}" for i in range(start, len(messages))][:20]
            payload.append(item)
        await memory.reconcile(workspace, payload, timeout_seconds)
        return len(payload)


async def harvest_quietly(model: ModelClient, memory: MemoryClient, workspace: str, session_id: str,
                          messages: list[Message], start: int, timeout_seconds: float) -> bool:
    """:func:`harvest`, with every failure logged instead of raised. True when it completed."""
    try:
        count = await harvest(model, memory, workspace, session_id, messages, start, timeout_seconds)
    except (AuxiliaryError, ModelError, TimeoutError) as err:
        log.warning("memory harvest of session %s skipped: %s", session_id, err)
        return False
    log.info("memory harvest of session %s sent %d candidate(s)", session_id, count)
    return True
