"""Assemble one streamed Chat Completions response from its chunks (pure).

Chunks arrive as plain dicts (``chunk.model_dump()``). Text and reasoning
deltas are returned as they come so the caller can stream them; tool calls
are put together from partial deltas keyed by ``index`` (falling back to
``id`` for endpoints that omit the index). Arguments that are not a JSON
object set ``ToolCall.parse_error``; nothing here raises on model output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from services.loop.pairing import unique_call_ids
from services.loop.ports import ToolCall

REASONING_KEYS = ("reasoning_content", "reasoning")


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class Delta:
    """What one chunk adds for the caller to stream."""

    text: str = ""
    reasoning: str = ""


def arguments_error(arguments_json: str) -> str:
    """Why ``arguments_json`` is not a JSON object, or "" when it is one."""
    if not arguments_json.strip():
        return ""
    try:
        value = json.loads(arguments_json)
    except json.JSONDecodeError as exc:
        return f"arguments are not valid JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(value, dict):
        return f"arguments must be a JSON object, got {type(value).__name__}"
    return ""


class StreamAssembler:
    """Feed chunks in order; read the assembled step from the properties."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self.finish_reason = ""
        self.usage: dict[str, Any] | None = None
        self.chunks = 0

    def feed(self, chunk: Mapping[str, Any]) -> Delta:
        """Take one chunk; return the text and reasoning it adds."""
        self.chunks += 1
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self.usage = dict(usage)
        out = Delta()
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, Mapping) or (choice.get("index") or 0) != 0:
                continue
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
            delta = choice.get("delta")
            if not isinstance(delta, Mapping):
                continue
            content = delta.get("content")
            if isinstance(content, str) and content:
                self._text.append(content)
                out.text += content
            for key in REASONING_KEYS:
                piece = delta.get(key)
                if isinstance(piece, str) and piece:
                    self._reasoning.append(piece)
                    out.reasoning += piece
                    break
            for call in delta.get("tool_calls") or ():
                if isinstance(call, Mapping):
                    self._add_call_delta(call)
        return out

    def _slot(self, call: Mapping[str, Any]) -> _PartialCall:
        index = call.get("index")
        if isinstance(index, int):
            return self._calls.setdefault(index, _PartialCall())
        call_id = call.get("id")
        function = call.get("function")
        names_a_call = isinstance(function, Mapping) and bool(function.get("name"))
        for partial in reversed(self._calls.values()):  # the latest call holding the id
            # A second named call under a known id is a new call that reuses the id, not more of the first.
            if call_id and partial.id == call_id and not (names_a_call and partial.name):
                return partial
        if not call_id and self._calls:
            return self._calls[max(self._calls)]  # a continuation without index or id
        return self._calls.setdefault(len(self._calls), _PartialCall())

    def _add_call_delta(self, call: Mapping[str, Any]) -> None:
        slot = self._slot(call)
        if call.get("id") and not slot.id:
            slot.id = str(call["id"])
        function = call.get("function")
        if isinstance(function, Mapping):
            if function.get("name"):
                slot.name += str(function["name"])
            if function.get("arguments"):
                slot.arguments.append(str(function["arguments"]))

    @property
    def text(self) -> str:
        """All text so far."""
        return "".join(self._text)

    @property
    def reasoning(self) -> str:
        """All reasoning so far."""
        return "".join(self._reasoning)

    @property
    def streamed_anything(self) -> bool:
        """True once text or reasoning was handed to the caller."""
        return bool(self._text or self._reasoning)

    def tool_calls(self, id_prefix: str = "call") -> list[ToolCall]:
        """The assembled calls in index order; bad JSON is flagged.

        Every call gets a distinct id (see :func:`unique_call_ids`): missing ids are
        made up and a repeated id is renamed, so each result pairs with its own call.
        """
        partials = [self._calls[index] for index in sorted(self._calls)]
        ids = unique_call_ids([p.id.strip() for p in partials], id_prefix)
        out: list[ToolCall] = []
        for partial, call_id in zip(partials, ids, strict=True):
            arguments = "".join(partial.arguments)
            error = arguments_error(arguments)
            if not partial.name:
                error = "the tool call has no function name"
            out.append(
                ToolCall(
                    id=call_id,
                    name=partial.name,
                    arguments_json=arguments or "{}",
                    parse_error=error,
                )
            )
        return out


class LineSplitter:
    """Text lines from the raw bytes of an event stream, however the chunks cut them (pure).

    Lines end with LF, CRLF or a lone CR (the SSE rule); a CR at the end of a
    chunk is held back until the next byte tells whether an LF follows. Line
    boundaries are ASCII, so each complete line decodes as UTF-8 on its own
    even when a chunk split a multi-byte character.
    """

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> list[str]:
        """Take the next bytes; return the lines they complete (without their endings)."""
        buffer = self._pending + data
        if not buffer:
            return []
        if buffer.endswith(b"\r"):
            buffer, self._pending = buffer[:-1], b"\r"
        else:
            self._pending = b""
        lines = buffer.splitlines(keepends=True)
        if lines and not lines[-1].endswith((b"\n", b"\r")):
            self._pending = lines.pop() + self._pending
        return [line.rstrip(b"\r\n").decode("utf-8", "replace") for line in lines]

    def finish(self) -> list[str]:
        """The last line when the stream ended without a line ending."""
        rest, self._pending = self._pending.rstrip(b"\r"), b""
        return [rest.decode("utf-8", "replace")] if rest else []


class SseDecoder:
    """Server-sent events from text lines: ``data:`` lines joined until a blank line (pure)."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> list[tuple[str, str]]:
        """Take one line (without its newline); return the events it completes."""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return []
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return []

    def finish(self) -> list[tuple[str, str]]:
        """The event still open when the stream ended, if any."""
        return self._dispatch()

    def _dispatch(self) -> list[tuple[str, str]]:
        if not self._data:
            self._event = ""
            return []
        event = (self._event or "message", "\n".join(self._data))
        self._event, self._data = "", []
        return [event]


def completion_as_chunk(body: Mapping[str, Any]) -> dict[str, Any]:
    """A non-streamed completion (an endpoint that ignored ``stream``) in chunk form."""
    choices = []
    for choice in body.get("choices") or ():
        if isinstance(choice, Mapping):
            message = choice.get("message") if isinstance(choice.get("message"), Mapping) else {}
            delta = dict(message or {})
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                delta["tool_calls"] = [dict(c, index=n) for n, c in enumerate(calls) if isinstance(c, Mapping)]
            choices.append({"index": choice.get("index", 0), "delta": delta,
                            "finish_reason": choice.get("finish_reason") or "stop"})
    return {"choices": choices, "usage": body.get("usage")}
