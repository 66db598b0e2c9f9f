"""Tool-call pairing: every assistant tool call answered by exactly one tool message.

Providers reject a request where an assistant ``tool_calls`` entry has no
matching ``role=tool`` message (or a tool message has no call). The pipeline
keeps pairs intact itself; this pure function is the safety net applied before
every request and every save, and to sessions loaded from disk.
"""

from __future__ import annotations

from typing import Any

Message = dict[str, Any]

MISSING_RESULT = "[no result: the call was interrupted before it finished]"


def call_ids(message: Message) -> list[str]:
    """The tool call ids of an assistant message (empty for other roles)."""
    if message.get("role") != "assistant":
        return []
    return [str(call.get("id", "")) for call in message.get("tool_calls") or []]


def repair_pairing(messages: list[Message]) -> tuple[list[Message], int]:
    """Return ``(paired messages, number of fixes)``.

    Missing results are filled with a short error message in call order;
    orphan or duplicate tool messages are dropped. Already-paired input comes
    back as the same list object with 0 fixes (cheap on long sessions).
    """
    if is_paired(messages):
        return messages, 0
    out: list[Message] = []
    fixes = 0
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if message.get("role") == "tool":
            fixes += 1  # orphan: no assistant call right before it
            continue
        out.append(message)
        ids = call_ids(message)
        if not ids:
            continue
        answered: dict[str, Message] = {}
        while i < len(messages) and messages[i].get("role") == "tool":
            tool_msg = messages[i]
            i += 1
            tid = str(tool_msg.get("tool_call_id", ""))
            if tid in ids and tid not in answered:
                answered[tid] = tool_msg
            else:
                fixes += 1
        for cid in ids:
            if cid in answered:
                out.append(answered[cid])
            else:
                fixes += 1
                out.append({"role": "tool", "tool_call_id": cid, "content": MISSING_RESULT})
    return out, fixes


def is_paired(messages: list[Message]) -> bool:
    """True when every tool call is answered right after its assistant message, in order."""
    expected: list[str] = []
    for message in messages:
        if message.get("role") == "tool":
            if not expected or message.get("tool_call_id") != expected[0]:
                return False
            expected.pop(0)
            continue
        if expected:
            return False
        expected = call_ids(message)
    return not expected
