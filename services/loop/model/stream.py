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
  marked ``truncated`` with a sentence asking for a shorter call;
- ``content`` as a list of parts (Anthropic- and Mistral-style ``[{"type": "text", "text"}]``,
  in ``delta`` or ``message``), Magistral's ``{"type": "thinking", "thinking": [parts]}`` among
  them read as reasoning;
- ``<think>...</think>`` opening the answer text (Qwen3 without a reasoning parser, llama.cpp
  with ``--reasoning-format none``), read as reasoning when the model entry says so
  (``think_tags``); a ``</think>`` whose opening tag the chat template put in the prompt
  splits the step's final text (it streamed as text: it is only known at ``</think>``);
- a stream that ends with ``[DONE]`` but no ``finish_reason`` (or ``""``): a complete answer
  (see :meth:`StreamAssembler.end`);
- chunks without ``choices`` at all (an Anthropic Messages stream at the URL): counted, and
  :func:`foreign_shape` names what they look like.
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
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_ANTHROPIC_TYPES = frozenset({"message", "message_start", "message_delta", "message_stop", "content_block_start",
                              "content_block_delta", "content_block_stop", "ping"})
_SURROGATE = re.compile("[\ud800-\udfff]")
TRUNCATED_CALL = (
    "the call was cut off at the model's output limit (finish_reason: length) after {chars} characters of "
    "arguments, so it was not run; send a shorter call: split a large write or edit into several smaller ones"
)

MAX_CALL_ARGUMENT_CHARS = 4 * 1024 * 1024
"""Longest arguments one tool call may carry (no model's output limit comes near: 128k tokens are
~0.5 MB); a longer call is refused and its arguments are dropped, so no later step copies them."""
OVERSIZE_CALL = (
    "the call's arguments are {chars:,} characters, over the 4,194,304 one call may carry, so it was not run "
    "and they were not kept; split a large write into several smaller calls"
)


def join_surrogates(text: str) -> str:
    """``text`` with UTF-16 surrogate pairs joined into their characters and lone surrogates as U+FFFD."""
    if text.isascii() or not _SURROGATE.search(text):  # isascii: one fast pass for the common case
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


def content_parts(content: Any) -> tuple[str, str]:
    """``(text, reasoning)`` of a message's ``content``: a string, or a list of typed parts."""
    if isinstance(content, str):
        return content, ""
    text: list[str] = []
    reasoning: list[str] = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, str):
            text.append(part)
        elif isinstance(part, Mapping):
            kind = part.get("type")
            if kind == "thinking" or kind == "reasoning":
                inner = part.get("thinking", part.get("reasoning", part.get("text", "")))
                reasoning.append(inner if isinstance(inner, str) else content_parts(inner)[0])
            elif isinstance(part.get("text"), str) and kind in (None, "text", "output_text"):
                text.append(part["text"])
    return "".join(text), "".join(reasoning)


def foreign_shape(body: Mapping[str, Any]) -> str:
    """What a reply without ``choices`` looks like, as a sentence for the user."""
    kind = body.get("type")
    if kind in _ANTHROPIC_TYPES or (body.get("role") == "assistant" and isinstance(body.get("content"), list)):
        return ("it answered in Anthropic's Messages format (`type: " + str(kind or "message") + "`, content "
                "blocks, no `choices`), not Chat Completions")
    keys = ", ".join(f"`{k}`" for k in list(body)[:6]) or "nothing"
    return f"its reply has no `choices` (it carries {keys}), so it is not a Chat Completions reply"


class ThinkSplitter:
    """Answer text with a ``<think>...</think>`` block at its start routed to reasoning (pure).

    Only a block that opens the answer counts (leading whitespace aside): a tag further on is
    the model writing about tags. A piece that might still become a tag is held for the next.
    """

    def __init__(self) -> None:
        self._state = "start"  # start -> inside -> after (text flows through)
        self._held = ""

    def feed(self, piece: str) -> tuple[str, str]:
        """``(text, reasoning)`` of ``held + piece`` that is safe to hand on now."""
        buffer, self._held = self._held + piece, ""
        text = reasoning = ""
        if self._state == "start":
            head = buffer.lstrip()
            if head.startswith(THINK_OPEN):
                self._state, buffer = "inside", head[len(THINK_OPEN):]
            elif THINK_OPEN.startswith(head):
                self._held = buffer
                return "", ""
            else:
                self._state = "through"
                return buffer, ""
        if self._state == "inside":
            end = buffer.find(THINK_CLOSE)
            if end < 0:
                keep = _partial_suffix(buffer, THINK_CLOSE)
                self._held = buffer[len(buffer) - keep:] if keep else ""
                return "", buffer[: len(buffer) - keep]
            reasoning, buffer = buffer[:end], buffer[end + len(THINK_CLOSE):]
            self._state = "after"
        if self._state == "after":
            buffer = buffer.lstrip()
            if not buffer:
                return text, reasoning
            self._state = "through"
        return buffer, reasoning

    def finish(self) -> tuple[str, str]:
        """What is still held when the answer ends: text before a tag was settled, reasoning inside one."""
        held, self._held = self._held, ""
        return ("", held) if self._state == "inside" else (held, "")


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that is the start of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


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

    def __init__(self, think_tags: bool = False) -> None:
        self._think = ThinkSplitter() if think_tags else None
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
        self.chunks_without_choices = 0
        """Chunks that have no ``choices`` key at all (usage-only chunks carry an empty list)."""
        self.foreign: Mapping[str, Any] | None = None
        """The first such chunk, for :func:`foreign_shape`."""
        self.response_id = ""
        self.response_model = ""
        self.first_chunk_at = 0.0
        """When the reply's first bytes arrived (``time.monotonic()``; 0 = none yet)."""

    def feed(self, chunk: Mapping[str, Any]) -> Delta:
        """Take one chunk; return the text and reasoning it adds."""
        self.chunks += 1
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self.usage = dict(usage)
        self.response_id = self.response_id or str(chunk.get("id") or "")
        self.response_model = self.response_model or str(chunk.get("model") or "")
        if "choices" not in chunk:
            self.chunks_without_choices += 1
            self.foreign = self.foreign or chunk
        out = Delta()
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, Mapping) or (choice.get("index") or 0) != 0:
                continue
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
            delta = self._delta_of(choice)
            if delta is None:
                continue
            content, part_reasoning = content_parts(delta.get("content"))
            for key in REASONING_KEYS:
                raw = delta.get(key)
                if isinstance(raw, str) and raw:
                    self._add_reasoning(self._reasoning_joiner.feed(raw), out)
                    break
            if part_reasoning:
                self._add_reasoning(self._reasoning_joiner.feed(part_reasoning), out)
            if content:
                self._add_text(self._text_joiner.feed(content), out)
            for call in delta.get("tool_calls") or ():
                if isinstance(call, Mapping):
                    self._add_call_delta(call)
        return out

    def _add_reasoning(self, reasoning: str, out: Delta) -> None:
        if reasoning:
            self._reasoning.append(reasoning)
            out.reasoning += reasoning

    def _add_text(self, text: str, out: Delta) -> None:
        if self._think is not None:
            text, reasoning = self._think.feed(text)
            self._add_reasoning(reasoning, out)
        if text:
            self._text.append(text)
            out.text += text

    def end(self, saw_done: bool) -> Delta:
        """The stream is over: hand on what was held back, and when it ended with ``[DONE]`` but
        no ``finish_reason`` (or ``""``), a reply that gave anything counts as complete."""
        out = Delta()
        if self._think is not None:
            text, reasoning = self._think.finish()
            self._add_reasoning(reasoning, out)
            if text:
                self._text.append(text)
                out.text += text
            self._split_prefilled()
        if saw_done and not self.finish_reason and not self.produced_nothing:
            self.finish_reason = "tool_calls" if self._calls else "stop"
        return out

    def _split_prefilled(self) -> None:
        """A template that opened ``<think>`` in the prompt (DeepSeek-R1 and its distills) leaves only
        ``reasoning</think>answer`` in the text: what precedes the first ``</think>`` is reasoning.
        It was streamed as text already; the step's text (what history keeps and sends back) is cut."""
        whole = "".join(self._text)
        end = whole.find(THINK_CLOSE)
        if end < 0 or THINK_OPEN in whole[:end]:
            return
        self._reasoning.append(whole[:end])
        self._text = [whole[end + len(THINK_CLOSE):].lstrip()]

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
            arguments = "".join(partial.arguments)
            if len(arguments) > MAX_CALL_ARGUMENT_CHARS:  # not kept: history, traces and requests stay small
                error, truncated, arguments = OVERSIZE_CALL.format(chars=len(arguments)), True, ""
            else:
                arguments = join_surrogates(arguments)
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
