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
    orphan or duplicate tool messages are dropped. Calls of one message that
    share an id (or have none) are renamed as :func:`unique_call_ids` does, and
    the k-th result carrying a shared id answers the k-th call that had it.
    Already-paired input comes back as the same list object with 0 fixes
    (cheap on long sessions).
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
        raw_ids = call_ids(message)
        ids = unique_call_ids(raw_ids, "call")
        if ids != raw_ids:
            fixes += sum(a != b for a, b in zip(raw_ids, ids, strict=True))
            message = {**message, "tool_calls": [
                {**call, "id": new} for call, new in zip(message["tool_calls"], ids, strict=True)]}
        out.append(message)
        if not ids:
            continue
        slots = _occurrence_slots(raw_ids, ids)
        seen: dict[str, int] = {}
        answered: dict[str, Message] = {}
        while i < len(messages) and messages[i].get("role") == "tool":
            tool_msg = messages[i]
            i += 1
            tid = str(tool_msg.get("tool_call_id", ""))
            seen[tid] = seen.get(tid, 0) + 1
            cid = slots.get((tid, seen[tid]))
            if cid is not None and cid not in answered:
                answered[cid] = tool_msg if cid == tid else {**tool_msg, "tool_call_id": cid}
            else:
                fixes += 1
        for cid in ids:
            if cid in answered:
                out.append(answered[cid])
            else:
                fixes += 1
                out.append({"role": "tool", "tool_call_id": cid, "content": MISSING_RESULT})
    return out, fixes


def _occurrence_slots(raw_ids: list[str], ids: list[str]) -> dict[tuple[str, int], str]:
    """``(sent id, k)`` -> the final id of the k-th call sent with that id."""
    count: dict[str, int] = {}
    slots: dict[tuple[str, int], str] = {}
    for raw, new in zip(raw_ids, ids, strict=True):
        count[raw] = count.get(raw, 0) + 1
        slots[(raw, count[raw])] = new
    return slots


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
        if len(set(expected)) != len(expected) or "" in expected:
            return False  # results to shared or empty ids cannot be told apart
    return not expected
