"""Provider wire shapes the fake model can speak instead of OpenAI's, each one seen in the wild (pure).

A step's ``wire`` picks one:

- ``openai`` (default): the standard stream.
- ``index_zero``: every tool call complete in one delta, all with ``index: 0`` (Ollama today;
  some Gemini and SGLang adapters).
- ``no_index``: every tool call complete in one delta with neither ``index`` nor ``id``.
- ``message``: chunks carry ``message`` where OpenAI puts ``delta``.
- ``split_surrogates``: text sent as JSON ``\\uXXXX`` escapes with every surrogate pair (an emoji)
  cut between two chunks.

``require_reasoning_echo: true`` on a step makes the server apply DeepSeek's thinking-mode rule
to the request before answering: the assistant messages of a user turn that made tool calls must
carry their ``reasoning_content``, or the request is refused with DeepSeek's HTTP 400.
"""

from __future__ import annotations

import json
from typing import Any

WIRE_SHAPES = ("openai", "index_zero", "no_index", "message", "split_surrogates")
DEEPSEEK_MISSING_REASONING = "The reasoning_content in the thinking mode must be passed back to the API."


def shape_deltas(wire: str, deltas: list[dict[str, Any]], calls: list[tuple[str, str, str]],
                 chunk_chars: int) -> list[dict[str, Any]]:
    """The standard ``deltas`` rewritten for ``wire``; ``calls`` are ``(id, name, arguments)``."""
    if wire in ("index_zero", "no_index"):
        deltas = [d for d in deltas if "tool_calls" not in d]
        for call_id, name, arguments in calls:
            entry: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
            if wire == "index_zero":
                entry = {"index": 0, "id": call_id, **entry}
            deltas.append({"tool_calls": [entry]})
    elif wire == "split_surrogates":
        deltas = [piece for d in deltas for piece in _split_pairs(d, chunk_chars)]
    return deltas


def shape_chunk(wire: str, chunk: dict[str, Any]) -> dict[str, Any]:
    """One chunk as ``wire`` sends it (``message`` in place of ``delta``)."""
    if wire != "message":
        return chunk
    return {**chunk, "choices": [{("message" if k == "delta" else k): v for k, v in choice.items()}
                                 for choice in chunk.get("choices", [])]}


def encode_chunk(chunk: dict[str, Any]) -> bytes:
    """The chunk as JSON bytes; text holding half of a surrogate pair goes out as ``\\uXXXX`` escapes."""
    try:
        return json.dumps(chunk, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return json.dumps(chunk).encode()


def _split_pairs(delta: dict[str, Any], chunk_chars: int) -> list[dict[str, Any]]:
    content = delta.get("content")
    if not isinstance(content, str) or not content:
        return [delta]
    units = content.encode("utf-16-le", "surrogatepass")
    pieces: list[str] = []
    start = 0
    for n in range(0, len(units), 2):
        high = 0xD800 <= int.from_bytes(units[n:n + 2], "little") <= 0xDBFF
        if high or (n + 2 - start) // 2 >= chunk_chars:
            pieces.append(units[start:n + 2].decode("utf-16-le", "surrogatepass"))
            start = n + 2
    if start < len(units):
        pieces.append(units[start:].decode("utf-16-le", "surrogatepass"))
    return [{**delta, "content": piece} for piece in pieces]


def reasoning_echo_refusal(messages: list[Any]) -> str | None:
    """DeepSeek's 400 message when an assistant message of a tool-calling user turn lacks its
    ``reasoning_content``; None when the request follows the rule."""
    span: list[dict[str, Any]] = []
    for message in [*messages, {"role": "user"}]:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            assistants = [m for m in span if m.get("role") == "assistant"]
            if any(m.get("tool_calls") for m in assistants) and not all(m.get("reasoning_content")
                                                                         for m in assistants):
                return DEEPSEEK_MISSING_REASONING
            span = []
        else:
            span.append(message)
    return None
