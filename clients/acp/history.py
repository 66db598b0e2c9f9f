"""``session/load``: a saved session's messages replayed as ``session/update`` notifications (pure).

User text as ``user_message_chunk``, assistant text and reasoning as agent chunks, each tool call
as a completed or failed ``tool_call`` with its input, diff and output.
"""

from __future__ import annotations

import json
import re
from typing import Any

from clients.acp import mapping

# A failed call's saved result reads "code: message" with a snake_case code (``denied_by_user: ...``);
# the session file keeps no other mark of failure.
_FAILED = re.compile(r"^(?:[a-z]+(?:_[a-z]+)+|cancelled|unavailable|timeout|error): ")


def failed(result: str) -> bool:
    return bool(_FAILED.match(result.lstrip()))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def replay(messages_json: str, workspace: str) -> list[dict[str, Any]]:
    """The updates that redraw a conversation, in order (system and loop-internal messages skipped)."""
    try:
        messages = json.loads(messages_json or "[]")
    except json.JSONDecodeError:
        return []
    updates: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        text = _text(message.get("content"))
        if role == "user" and text:
            updates.append(mapping.chunk("user_message_chunk", text))
        elif role == "assistant":
            if message.get("reasoning"):
                updates.append(mapping.chunk("agent_thought_chunk", str(message["reasoning"])))
            if text:
                updates.append(mapping.chunk("agent_message_chunk", text))
            for call in message.get("toolCalls") or []:
                update = mapping.tool_call(str(call.get("id", "")), str(call.get("name", "")),
                                           str(call.get("arguments", "")), "", workspace, status="in_progress")
                calls[update["toolCallId"]] = update
                updates.append(update)
        elif role == "tool" and message.get("toolCallId") in calls:
            call = calls.pop(message["toolCallId"])
            updates.append({"sessionUpdate": "tool_call_update", "toolCallId": call["toolCallId"],
                            "status": "failed" if failed(text) else "completed",
                            "content": [*call["content"], mapping.text_content(text[-mapping.OUTPUT_TAIL:])]})
    for call in calls.values():  # a call whose result never came (the turn was cut)
        updates.append({"sessionUpdate": "tool_call_update", "toolCallId": call["toolCallId"], "status": "failed"})
    return updates
