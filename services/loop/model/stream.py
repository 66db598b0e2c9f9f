"""Assemble one streamed Chat Completions response from its chunks (pure).

Chunks arrive as plain dicts (``chunk.model_dump()``). Text and reasoning
deltas are returned as they come so the caller can stream them; tool calls
are put together from partial deltas keyed by ``index`` (falling back to
``id`` for endpoints that omit the index). Arguments that are not a JSON
object set ``ToolCall.parse_error``; nothing here raises on model output.

Provider quirks handled here, each seen in the wild:

- every parallel call carrying ``index: 0`` (Ollama, some Gemini and SGLang
  adapters), or carrying neither index nor id: a delta with a new id, or one
  naming a function while the open call is already complete, starts a new call;
- an emoji sent as a JSON surrogate-pair escape cut between two chunks: a high
  surrogate at the end of a piece is held for the next one, pairs are joined
  and a surrogate left alone becomes U+FFFD (a lone surrogate cannot be encoded
  and used to crash the turn);
- chunks carrying ``message`` instead of ``delta``: read as the delta when no
  delta was seen in the stream; a choice with neither is counted so the caller
  can fail loudly instead of reporting an empty success;
- ``finish_reason: length`` while a call's arguments are still open: the call is
  marked ``truncated`` with a sentence asking for a shorter call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from services.loop.core.pairing import unique_call_ids
from services.loop.core.ports import ToolCall

REASONING_KEYS = ("reasoning_content", "reasoning")
_SURROGATE = re.compile("[\ud800-\udfff]")
TRUNCATED_CALL = (
    "the call was cut off at the model's output limit (finish_reason: length) after {chars} characters of "
    "arguments, so it was not run; send a shorter call: split a large write or edit into several smaller ones"
)


def join_surrogates(text: str) -> str:
    """``text`` with UTF-16 surrogate pairs joined into their characters and lone surrogates as U+FFFD."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class SurrogateJoiner:
    """Pieces of one streamed string, with a high surrogate at a piece's end held for the next (pure)."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        """The part of ``held + piece`` that is safe to hand on now."""
        piece, self._held = self._held + piece, ""
        if piece and "\ud800" <= piece[-1] <= "\udbff":
            piece, self._held = piece[:-1], piece[-1]
        return join_surrogates(piece)

    @property
    def pending(self) -> str:
        """What is held back, as it would read if no pair came (U+FFFD, or "")."""
        return join_surrogates(self._held)


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    index: int | None = None

    def complete(self) -> bool:
        """True when the arguments so far are already a whole JSON object (so more cannot belong to it)."""
        return bool(self.arguments) and not arguments_error("".join(self.arguments))


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
        self._text_joiner = SurrogateJoiner()
        self._reasoning_joiner = SurrogateJoiner()
        self._calls: list[_PartialCall] = []
        self._open: dict[int, _PartialCall] = {}  # the call each provider index currently feeds
        self._saw_delta = False
        self.shapeless_choices = 0
        """Choices that carried neither ``delta`` nor ``message`` (an endpoint we cannot read)."""
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
            delta = self._delta_of(choice)
            if delta is None:
                continue
            content = delta.get("content")
            if isinstance(content, str) and content:
                text = self._text_joiner.feed(content)
                self._text.append(text)
                out.text += text
            for key in REASONING_KEYS:
                raw = delta.get(key)
                if isinstance(raw, str) and raw:
                    reasoning = self._reasoning_joiner.feed(raw)
                    self._reasoning.append(reasoning)
                    out.reasoning += reasoning
                    break
            for call in delta.get("tool_calls") or ():
                if isinstance(call, Mapping):
                    self._add_call_delta(call)
        return out

    def _delta_of(self, choice: Mapping[str, Any]) -> Mapping[str, Any] | None:
        delta = choice.get("delta")
        if isinstance(delta, Mapping):
            self._saw_delta = True
            return delta
        message = choice.get("message")
        if isinstance(message, Mapping):
            # Some endpoints stream whole ``message`` objects; one that also sent deltas
            # repeats them in a closing message, which must not be counted twice.
            return None if self._saw_delta else message
        if not choice.get("finish_reason"):
            self.shapeless_choices += 1
        return None

    def _slot(self, call: Mapping[str, Any]) -> _PartialCall:
        index = call.get("index")
        call_id = str(call.get("id") or "")
        function = call.get("function")
        names_a_call = isinstance(function, Mapping) and bool(function.get("name"))
        if isinstance(index, int):
            current = self._open.get(index)
        else:
            current = self._by_id(call_id, names_a_call) if call_id else (self._calls[-1] if self._calls else None)
        if current is None or self._starts_new_call(current, call_id, names_a_call):
            current = _PartialCall(index=index if isinstance(index, int) else None)
            self._calls.append(current)
            if isinstance(index, int):
                self._open[index] = current
        return current

    def _by_id(self, call_id: str, names_a_call: bool) -> _PartialCall | None:
        for partial in reversed(self._calls):  # the latest call holding the id
            # A second named call under a known id is a new call that reuses the id, not more of the first.
            if partial.id == call_id and not (names_a_call and partial.name):
                return partial
        return None

    @staticmethod
    def _starts_new_call(current: _PartialCall, call_id: str, names_a_call: bool) -> bool:
        """A delta under the same index (or none) that cannot continue ``current``."""
        if call_id and current.id and call_id != current.id:
            return True
        return names_a_call and bool(current.name) and current.complete()

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
        """All text so far (a surrogate still held for its pair is shown as U+FFFD)."""
        return "".join(self._text) + self._text_joiner.pending

    @property
    def reasoning(self) -> str:
        """All reasoning so far."""
        return "".join(self._reasoning) + self._reasoning_joiner.pending
    @property
    def produced_nothing(self) -> bool:
        """True when the stream gave no text, reasoning or tool call."""
        return not (self.text or self.reasoning or self._calls)

    @property
    def streamed_anything(self) -> bool:
        """True once text or reasoning was handed to the caller."""
        return bool(self._text or self._reasoning)

    def tool_calls(self, id_prefix: str = "call") -> list[ToolCall]:
        """The assembled calls; bad JSON is flagged, a call cut off at the limit named.

        Every call gets a distinct id (see :func:`unique_call_ids`): missing ids are
        made up and a repeated id is renamed, so each result pairs with its own call.
        """
        # Index order; calls sharing an index (or without one) keep their arrival order (a stable sort).
        partials = sorted(self._calls, key=lambda p: p.index if p.index is not None else len(self._calls))
        ids = unique_call_ids([p.id.strip() for p in partials], id_prefix)
        out: list[ToolCall] = []
        for partial, call_id in zip(partials, ids, strict=True):
            arguments = join_surrogates("".join(partial.arguments))
            error = arguments_error(arguments)
            truncated = bool(error) and self.finish_reason == "length" and partial is self._calls[-1]
            if truncated:
                error = TRUNCATED_CALL.format(chars=len(arguments))
            if not partial.name:
                error, truncated = "the tool call has no function name", False
            out.append(
                ToolCall(
                    id=call_id,
                    name=join_surrogates(partial.name),
                    arguments_json=arguments or "{}",
                    parse_error=error,
                    truncated=truncated,
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
