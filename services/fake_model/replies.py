"""Pure builders for what the fake model sends: completions, stream chunks, usage and error bodies.

The shapes follow the OpenAI Chat Completions wire format (and DeepSeek's usage
variant) closely enough that the official ``openai`` client parses them as it
would a real provider's.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from services.fake_model import wire
from services.fake_model.script import Step

# Characters per tool-argument fragment in a stream: real providers send a few
# tokens per chunk, so a typical call arrives as several fragments.
ARGUMENT_FRAGMENT_CHARS = 8


def message_text(message: Any) -> str:
    """The text of one Chat Completions message: string content, or its text parts joined."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def last_message_text(body: dict[str, Any]) -> str:
    """The text of the request's last message ("" when there are no messages)."""
    messages = body.get("messages")
    if isinstance(messages, list) and messages:
        return message_text(messages[-1])
    return ""


@dataclass(frozen=True)
class Conversation:
    """What a step's match keys look at in one request: the last message, the first user message, all of it."""

    last: str = ""
    first_user: str = ""
    everything: str = ""

    @classmethod
    def of(cls, body: dict[str, Any]) -> Conversation:
        """The views of a chat request body (tool-call arguments count as part of ``everything``)."""
        messages = body.get("messages")
        if not isinstance(messages, list):
            return cls()
        first_user = next((message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"), "")
        parts: list[str] = []
        for message in messages:
            parts.append(message_text(message))
            calls = message.get("tool_calls") if isinstance(message, dict) else None
            for call in calls if isinstance(calls, list) else []:
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict):
                    parts.append(str(function.get("arguments", "")))
        return cls(last=last_message_text(body), first_user=first_user, everything="\n".join(parts))


def match_failure(step: Step, label: str, seen: str | Conversation) -> str | None:
    """``None`` when every match key of ``step`` holds for the request; else a message naming what failed."""
    view = seen if isinstance(seen, Conversation) else Conversation(last=seen, first_user=seen, everything=seen)
    missing = [m for m in step.match if m not in view.last]
    if missing:
        return (f"fake model: {label} expects the last message to contain {missing[0]!r}, "
                f"but the last message was: {_shown(view.last)!r}")
    missing = [m for m in step.match_first_user if m not in view.first_user]
    if missing:
        return (f"fake model: {label} expects the first user message to contain {missing[0]!r}, "
                f"but it was: {_shown(view.first_user)!r}")
    missing = [m for m in step.match_anywhere if m not in view.everything]
    if missing:
        return (f"fake model: {label} expects some message to contain {missing[0]!r}; none does "
                f"(last message: {_shown(view.last)!r})")
    present = [m for m in step.match_absent if m in view.everything]
    if present:
        return (f"fake model: {label} expects no message to contain {present[0]!r}, but one does "
                f"(last message: {_shown(view.last)!r})")
    return None


def _shown(text: str) -> str:
    return text if len(text) <= 300 else text[:150] + " ... " + text[-150:]


def serialize_prompt(body: dict[str, Any]) -> str:
    """The request's messages as one canonical string, for prefix-cache accounting."""
    return json.dumps(body.get("messages", []), ensure_ascii=False, separators=(",", ":"))


def common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings."""
    limit = min(len(a), len(b))
    if a[:limit] == b[:limit]:
        return limit
    low, high = 0, limit  # invariant: a[:low] == b[:low], a[:high] != b[:high]
    while high - low > 1:
        mid = (low + high) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid
    return low


def token_estimate(chars: int) -> int:
    """Roughly four characters per token, as providers' rules of thumb say."""
    return math.ceil(chars / 4)


def completion_chars(step: Step) -> int:
    """How many characters the reply generates (text, reasoning and tool-call arguments)."""
    return len(step.text) + len(step.reasoning) + sum(len(c.name) + len(c.arguments_json) for c in step.tool_calls)


def compute_usage(step: Step, request_bytes: int, prompt: str, previous_prompt: str) -> dict[str, Any] | None:
    """The usage object for this reply in the step's shape, or ``None`` for ``usage_shape: none``.

    Prompt tokens ~ request bytes / 4; cached tokens ~ the common prefix with
    the previous request's messages / 4; a step's ``usage`` mapping overrides any figure.
    """
    if step.usage_shape == "none":
        return None
    prompt_tokens = step.usage.get("prompt_tokens", token_estimate(request_bytes))
    completion_tokens = step.usage.get("completion_tokens", token_estimate(completion_chars(step)))
    reasoning_tokens = step.usage.get("reasoning_tokens", token_estimate(len(step.reasoning)))
    cached = step.usage.get("cached_tokens", common_prefix_length(prompt, previous_prompt) // 4)
    cached = min(cached, prompt_tokens)
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if step.usage_shape == "openai":
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    elif step.usage_shape == "deepseek":
        usage["prompt_cache_hit_tokens"] = cached
        usage["prompt_cache_miss_tokens"] = prompt_tokens - cached
    return usage


def tool_call_ids(step: Step, request_number: int) -> list[str]:
    """Ids for the step's tool calls: the scripted id, else one unique to this request."""
    return [c.id or f"call_{request_number}_{k}" for k, c in enumerate(step.tool_calls)]


def completion_body(step: Step, *, completion_id: str, model: str, created: int, ids: list[str],
                    usage: dict[str, Any] | None) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` reply."""
    message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
    if step.reasoning:
        message["reasoning_content"] = step.reasoning
    if step.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}}
            for call_id, c in zip(ids, step.tool_calls, strict=True)
        ]
    body: dict[str, Any] = {
        "id": completion_id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": step.effective_finish_reason(),
                     "logprobs": None}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def split_text(text: str, size: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``size`` characters (none for an empty text)."""
    return [text[i:i + size] for i in range(0, len(text), size)]


def stream_deltas(step: Step, ids: list[str]) -> list[dict[str, Any]]:
    """The ordered ``delta`` objects of a streamed reply: role, reasoning, text, then split tool calls."""
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"reasoning_content": piece} for piece in split_text(step.reasoning, step.chunk_chars)]
    deltas += [{"content": piece} for piece in split_text(step.text, step.chunk_chars)]
    for index, (call_id, call) in enumerate(zip(ids, step.tool_calls, strict=True)):
        deltas.append({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                       "function": {"name": call.name, "arguments": ""}}]})
        deltas += [{"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                   for piece in split_text(call.arguments_json, step.argument_chunk_chars)]
    calls = [(call_id, c.name, c.arguments_json) for call_id, c in zip(ids, step.tool_calls, strict=True)]
    return wire.shape_deltas(step.wire, deltas, calls, step.chunk_chars)


def stream_chunks(step: Step, *, completion_id: str, model: str, created: int, ids: list[str],
                  include_usage: bool, usage: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every ``chat.completion.chunk`` of a streamed reply, the usage-only chunk last when asked for."""
    def chunk(choices: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                                "model": model, "choices": choices}
        if include_usage:
            body["usage"] = None
        return body

    chunks = [chunk([{"index": 0, "delta": d, "finish_reason": None}]) for d in stream_deltas(step, ids)]
    chunks.append(chunk([{"index": 0, "delta": {},
                          "finish_reason": wire.finish_reason_on_wire(step.wire, step.effective_finish_reason())}]))
    chunks = [wire.shape_chunk(step.wire, c) for c in chunks]
    if include_usage and usage is not None:
        chunks.append({**chunk([]), "usage": usage})
    return chunks


def error_body(message: str, *, type_: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """The OpenAI error envelope: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def context_length_message(prompt_tokens: int, limit: int = 128000) -> str:
    """The wording providers use for an over-long prompt."""
    return (f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
            f"{max(prompt_tokens, limit + 1)} tokens. Please reduce the length of the messages.")


def context_length_reply(style: str, prompt_tokens: int, limit: int) -> tuple[int, Any]:
    """``(status, body)`` of an over-long prompt's error as ``style``'s server words it.

    ``llamacpp``: llama.cpp server's ``exceed_context_size_error`` with ``n_prompt_tokens``/``n_ctx``;
    ``gemini``: Gemini's OpenAI endpoint, a list of Google error envelopes.
    """
    tokens = max(prompt_tokens, limit + 1)
    if style == "llamacpp":
        return 400, {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": tokens,
                               "n_ctx": limit, "message": f"request ({tokens} tokens) exceeds the available "
                                                          f"context size ({limit} tokens), try increasing it"}}
    if style == "gemini":
        return 400, [{"error": {"code": 400, "status": "INVALID_ARGUMENT", "message":
                                f"The input token count ({tokens}) exceeds the maximum number of tokens "
                                f"allowed ({limit})."}}]
    return 400, error_body(context_length_message(prompt_tokens, limit), type_="invalid_request_error",
                           code="context_length_exceeded", param="messages")


def shaped_error(shape: str, status: int, message: str) -> tuple[str, bytes]:
    """``(content type, body)`` of an error reply shaped as servers in the wild send them: ``string``
    (LM Studio: ``{"error": "..."}``), ``list`` (Gemini), ``text`` (a proxy's plain 502), ``html`` (a 503 page)."""
    if shape == "string":
        return "application/json", json.dumps({"error": message}).encode()
    if shape == "list":
        return "application/json", json.dumps([{"error": {"code": status, "message": message,
                                                          "status": "INVALID_ARGUMENT"}}]).encode()
    if shape == "text":
        return "text/plain; charset=utf-8", message.encode()
    if shape == "html":
        page = (f"<!DOCTYPE html><html><head><title>{status} {message}</title><style>body{{color:red}}</style>"
                f"</head><body><h1>{message}</h1><p>nginx</p></body></html>")
        return "text/html", page.encode()
    payload = error_body(message, type_="invalid_request_error" if status < 500 else "server_error")
    return "application/json", json.dumps(payload).encode()


def param_refusal(style: str, param: str, value: Any) -> tuple[int, Any]:
    """``(status, body)`` of a server refusing a request field it does not know: OpenAI's wording, or
    vLLM's pydantic ``extra_forbidden`` list in a message string."""
    if style == "pydantic":
        detail = [{"type": "extra_forbidden", "loc": ("body", param), "msg": "Extra inputs are not permitted",
                   "input": value}]
        return 400, {"object": "error", "message": str(detail), "type": "BadRequestError", "param": None,
                     "code": 400}
    return 400, error_body(f"Unknown parameter: '{param}'.", type_="invalid_request_error",
                           code="unknown_parameter", param=param)
