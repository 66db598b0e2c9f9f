"""Provider wire shapes the fake model can speak instead of OpenAI's, each one seen in the wild (pure).

A step's ``wire`` picks one:

- ``openai`` (default): the standard stream.
- ``index_zero``: every tool call complete in one delta, all with ``index: 0`` (Ollama today;
  some Gemini and SGLang adapters).
- ``no_index``: every tool call complete in one delta with neither ``index`` nor ``id``.
- ``message``: chunks carry ``message`` where OpenAI puts ``delta``.
- ``split_surrogates``: text sent as JSON ``\\uXXXX`` escapes with every surrogate pair (an emoji)
  cut between two chunks.
- ``content_parts``: ``delta.content`` as a list of ``{"type": "text", "text"}`` parts (Mistral).
- ``magistral``: reasoning as ``content: [{"type": "thinking", "thinking": [text parts]}]`` and
  text as text parts (Magistral), no ``reasoning_content``.
- ``json_parts``: ``stream`` ignored; one JSON completion whose ``message.content`` is a list of
  text parts (Anthropic- and Mistral-style).
- ``think_tags``: the reasoning sent inline, ``<think>...</think>`` opening the text (Qwen3
  without a reasoning parser, llama.cpp ``--reasoning-format none``).
- ``no_finish_reason`` / ``empty_finish_reason``: the stream ends with ``[DONE]`` and its
  finish_reason is ``null`` (Gemini-to-OpenAI proxies) or ``""`` (Ollama).
- ``anthropic``: an Anthropic Messages reply (``event: message_start`` ... no ``choices``, no
  ``[DONE]``; a JSON ``type: message`` body without streaming): a server that is not Chat Completions;
  ``anthropic_json``: the JSON body even when the request streams.

``require_reasoning_echo: true`` on a step makes the server apply DeepSeek's thinking-mode rule
to the request before answering: the assistant messages of a user turn that made tool calls must
carry their ``reasoning_content``, or the request is refused with DeepSeek's HTTP 400.
"""

from __future__ import annotations

import json
from typing import Any

WIRE_SHAPES = ("openai", "index_zero", "no_index", "message", "split_surrogates", "content_parts", "magistral",
               "json_parts", "think_tags", "no_finish_reason", "empty_finish_reason", "anthropic", "anthropic_json")
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
    elif wire in ("content_parts", "magistral"):
        deltas = [_as_parts(d, wire == "magistral") for d in deltas]
    elif wire == "think_tags":
        deltas = _inline_reasoning(deltas)
    return deltas


def _as_parts(delta: dict[str, Any], thinking_parts: bool) -> dict[str, Any]:
    if isinstance(delta.get("content"), str) and delta["content"]:
        return {**delta, "content": [{"type": "text", "text": delta["content"]}]}
    if thinking_parts and delta.get("reasoning_content"):
        return {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": delta["reasoning_content"]}]}]}
    return delta


def _inline_reasoning(deltas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Reasoning deltas become text: ``<think>`` before the first, ``</think>`` after the last."""
    out: list[dict[str, Any]] = []
    pieces = [d["reasoning_content"] for d in deltas if d.get("reasoning_content")]
    if pieces:
        out.append({"content": "<th"})  # a tag cut between chunks, as token streams cut it
        out.append({"content": "ink>" + pieces[0]})
        out += [{"content": piece} for piece in pieces[1:]]
        out.append({"content": "</think>\n\n"})
    return deltas[:1] + out + [d for d in deltas[1:] if not d.get("reasoning_content")]


def finish_reason_on_wire(wire: str, reason: str) -> str | None:
    """The finish_reason the closing chunk carries for ``wire``."""
    return {"no_finish_reason": None, "empty_finish_reason": ""}.get(wire, reason)


def anthropic_events(text: str, model: str, message_id: str) -> list[tuple[str, dict[str, Any]]]:
    """An Anthropic Messages stream: ``(event name, data)`` pairs."""
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": message_id, "type": "message", "role": "assistant", "content": [], "model": model,
            "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
    ]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": text}})] if text else []
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                  "usage": {"output_tokens": 5}}),
               ("message_stop", {"type": "message_stop"})]
    return events


def anthropic_message(text: str, model: str, message_id: str) -> dict[str, Any]:
    """A non-streamed Anthropic Messages reply."""
    return {"id": message_id, "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5}}


def parts_completion(body: dict[str, Any]) -> dict[str, Any]:
    """A completion whose ``message.content`` strings become lists of text parts."""
    choices = []
    for choice in body.get("choices", []):
        message = dict(choice.get("message") or {})
        if isinstance(message.get("content"), str):
            message["content"] = [{"type": "text", "text": message["content"]}]
        choices.append({**choice, "message": message})
    return {**body, "choices": choices}


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
