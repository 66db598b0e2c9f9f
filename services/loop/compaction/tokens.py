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


class RunningBytes:
    """``sum(message_bytes)`` of a history that only grows between compactions, kept up to date:
    a step costs what it appended, not the length of the session.

    Counted again from scratch when the history was rewritten (shorter, the last counted message
    no longer in place) or when ``state`` is another object than last time (a view is a pure
    function of the record and the compaction state, and a new state is a new object)."""

    def __init__(self, large_tool_chars: int = 800) -> None:
        self._count = 0
        self._bytes = 0
        self._last: Message | None = None
        self._state: object = None
        self._large = large_tool_chars
        self.large_tool_bytes = 0
        """Of those, the tool results longer than ``large_tool_chars`` (what an L2 pass could envelope)."""

    def of(self, history: list[Message], state: object) -> int:
        n = self._count
        if state is not self._state or len(history) < n or (n and history[n - 1] is not self._last):
            n, self._bytes, self._state, self.large_tool_bytes = 0, 0, state, 0
        for m in history[n:]:
            size = message_bytes(m)
            self._bytes += size
            if m.get("role") == "tool" and len(str(m.get("content") or "")) > self._large:
                self.large_tool_bytes += size
        self._count = len(history)
        self._last = history[-1] if history else None
        return self._bytes


def should_compact(observed_tokens: int, estimated_tokens: int, ceiling: int) -> bool:
    """The trigger: the larger of what the provider last reported (carried forward) and our estimate
    reaches the ceiling. Provider figures can be missing (0) or stale; ours can be low on unusual text."""
    return max(observed_tokens, estimated_tokens) >= ceiling
