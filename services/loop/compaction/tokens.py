"""Token estimates and the trigger rule.

Roughly four bytes per token for English text, code and JSON. A request is
sent as JSON, where every newline, quote and backslash of a message's text
costs one more byte; those are counted (str.count runs at memory speed), so a
shell output full of newlines is not underestimated by a fifth.
"""

from __future__ import annotations

from typing import Any

Message = dict[str, Any]

# Per message: role, keys and punctuation of its JSON object.
MESSAGE_OVERHEAD_BYTES = 40
CALL_OVERHEAD_BYTES = 60


def text_bytes(text: str) -> int:
    """Bytes ``text`` takes inside a JSON string (ASCII assumed; other text is rarer and shorter in tokens)."""
    return len(text) + text.count("\n") + text.count('"') + text.count("\\")


def message_bytes(message: Message) -> int:
    """Bytes one message adds to a request."""
    content = message.get("content")
    size = MESSAGE_OVERHEAD_BYTES + (text_bytes(content) if isinstance(content, str) else len(str(content or "")))
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        size += CALL_OVERHEAD_BYTES + len(function.get("name", "")) + text_bytes(function.get("arguments", ""))
    return size


def tokens_of_bytes(size: int) -> int:
    """The estimate for ``size`` request bytes."""
    return (size + 3) // 4


def message_tokens(message: Message) -> int:
    """Estimated tokens of one message."""
    return tokens_of_bytes(message_bytes(message))


def history_tokens(messages: list[Message]) -> int:
    """Estimated tokens of a list of messages."""
    return tokens_of_bytes(sum(message_bytes(m) for m in messages))


def should_compact(observed_tokens: int, estimated_tokens: int, ceiling: int) -> bool:
    """The trigger: the larger of what the provider last reported (carried forward) and our estimate
    reaches the ceiling. Provider figures can be missing (0) or stale; ours can be low on unusual text."""
    return max(observed_tokens, estimated_tokens) >= ceiling
