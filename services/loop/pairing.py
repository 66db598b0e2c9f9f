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


def unique_call_ids(raw_ids: list[str], id_prefix: str) -> list[str]:
    """One distinct id per call of a step, in order.

    Results are matched to calls by id, so two calls sharing one would both get
    the first call's result. The first holder of an id keeps it; a later
    duplicate becomes ``<id>_2``, ``<id>_3``...; an empty id becomes
    ``<id_prefix>_<n>``. Names the model did send are never taken by a rename.
    """
    sent = {i for i in raw_ids if i}
    taken: set[str] = set()
    out: list[str] = []
    for n, raw in enumerate(raw_ids):
        if raw and raw not in taken:
            new = raw
        else:
            base, k = (raw, 2) if raw else (f"{id_prefix}_{n}", 1)
            new = base if k == 1 else f"{base}_{k}"
            while new in taken or (new != raw and new in sent):
                k += 1
                new = f"{base}_{k}"
        taken.add(new)
        out.append(new)
    return out


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
