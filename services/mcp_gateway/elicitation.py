"""MCP elicitation: a server asks the user something in the middle of a tool call.

The path is gateway -> loop -> client: the SDK hands the gateway an ``elicitation/create``
request; :class:`ElicitationBroker` puts it on the CallTool stream of the call running on that
server (as an :class:`ElicitAsk`) and waits for the loop's ``AnswerElicitation``. The loop turns
a form into one question per field (:func:`form_fields`, :func:`parse_field`) on the turn's
usual question path, so the REPL and ``run`` show it like ``ask_user``.

Pure: no SDK, no gRPC (the loop imports the form helpers). The broker needs a running asyncio loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from services.kernel.elicit import ACTIONS, Action, ElicitAsk, ElicitReply, Value

log = logging.getLogger("ai_coding.mcp_gateway.elicitation")

__all__ = ["ACTIONS", "Action", "ElicitAsk", "ElicitReply", "Value"]

ANSWER_WAIT_S = 600.0
"""How long an elicitation waits for the user before it is cancelled."""
ElicitSink = Callable[[ElicitAsk], None]
"""Where the broker puts a request for the call it belongs to (the CallTool stream)."""


@dataclass(frozen=True)
class FormField:
    """One property of a requested schema, as a question."""

    name: str
    label: str
    kind: str
    """"string", "integer", "number", "boolean", "enum" or "multi" (array of enum strings)."""
    options: tuple[str, ...] = ()
    default: Value = None
    required: bool = False


def form_fields(schema: Mapping[str, Any]) -> list[FormField]:
    """The schema's properties in order, each with its label, kind, options and default."""
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or [])
    out: list[FormField] = []
    for name, prop in (props or {}).items():
        if not isinstance(prop, dict):
            continue
        label = str(prop.get("title") or name)
        if prop.get("description"):
            label += f": {prop['description']}"
        kind = str(prop.get("type") or "string")
        options: tuple[str, ...] = ()
        enum = prop.get("enum") or [o.get("const") for o in prop.get("oneOf") or [] if isinstance(o, dict)]
        if kind == "array":
            items = prop.get("items") if isinstance(prop.get("items"), dict) else {}
            choices = (items or {}).get("enum") or [o.get("const") for o in (items or {}).get("anyOf") or []
                                                    if isinstance(o, dict)]
            kind, options = "multi", tuple(str(c) for c in choices if c is not None)
        elif enum:
            kind, options = "enum", tuple(str(c) for c in enum if c is not None)
        elif kind == "boolean":
            options = ("yes", "no")
        out.append(FormField(name, label, kind, options, prop.get("default"), name in required))
    return out


def question_text(ask: ElicitAsk, item: FormField | None, index: int = 0, count: int = 0) -> str:
    """What the user reads for one field (or for the whole request when it has no fields)."""
    head = f"MCP server {ask.server!r} asks: {ask.message}"
    if ask.mode == "url":
        return f"{head}\nOpen {ask.url} , then answer accept (done) or decline."
    if item is None:
        return f"{head}\nAnswer accept or decline."
    extra = []
    if item.default is not None:
        extra.append(f"Enter for {item.default!r}" if item.kind != "boolean" else f"Enter for {_yes_no(item.default)}")
    elif not item.required:
        extra.append("Enter to skip")
    if item.kind == "multi":
        extra.append("several: comma-separated")
    extra.append("/decline to refuse")
    return f"{head}\n({index}/{count}) {item.label} [{item.kind}; {', '.join(extra)}]"


def _yes_no(value: Value) -> str:
    return "yes" if value is True else "no"


def parse_field(item: FormField, text: str) -> tuple[Value, str]:
    """The typed value of one answer ('' -> the default, or None when there is none) or a problem."""
    raw = text.strip()
    if not raw:
        if item.default is None and item.required:
            return None, f"{item.name} is required"
        return item.default, ""
    if item.kind == "boolean":
        lowered = raw.lower()
        if lowered in ("y", "yes", "true", "1"):
            return True, ""
        if lowered in ("n", "no", "false", "0"):
            return False, ""
        return None, f"{item.name} takes yes or no, not {raw!r}"
    if item.kind in ("integer", "number"):
        try:
            number = float(raw)
        except ValueError:
            return None, f"{item.name} takes a number, not {raw!r}"
        if item.kind == "integer":
            if not number.is_integer():
                return None, f"{item.name} takes a whole number, not {raw!r}"
            return int(number), ""
        return number, ""
    if item.kind == "enum":
        return (raw, "") if raw in item.options else (None, f"{item.name} is one of {', '.join(item.options)}")
    if item.kind == "multi":
        picked = [p.strip() for p in raw.split(",") if p.strip()]
        wrong = [p for p in picked if item.options and p not in item.options]
        if wrong:
            return None, f"{item.name} takes some of {', '.join(item.options)}; not {', '.join(wrong)}"
        return picked, ""
    return raw, ""


def with_defaults(schema: Mapping[str, Any], content: Mapping[str, Value]) -> dict[str, Value]:
    """``content`` with every omitted field that has a default filled in (SEP-1034); None values dropped."""
    filled: dict[str, Value] = {k: v for k, v in content.items() if v is not None}
    for item in form_fields(schema):
        if item.name not in filled and item.default is not None:
            filled[item.name] = item.default
    return filled


class ElicitationBroker:
    """Routes elicitation requests to the call running on their server and back.

    An elicitation belongs to the tools/call in progress on that server's session. When several
    calls run on one server at once, it goes to the oldest (the protocol does not say which call
    asked; the SDK gives no related request id); with none running it is declined.
    """

    def __init__(self, answer_wait_s: float = ANSWER_WAIT_S) -> None:
        self._answer_wait_s = answer_wait_s
        self._calls: dict[str, list[ElicitSink]] = {}
        self._waiting: dict[str, asyncio.Future[ElicitReply]] = {}
        self._ids = itertools.count(1)
        self._asked_s: dict[str, float] = {}  # per server: seconds questions have waited, finished ones
        self._asking: dict[str, list[float]] = {}  # per server: when each open question was asked

    @contextlib.contextmanager
    def call(self, server: str, sink: ElicitSink | None) -> Iterator[None]:
        """While the block runs, elicitations of ``server`` go to ``sink``."""
        if sink is None:
            yield
            return
        sinks = self._calls.setdefault(server, [])
        sinks.append(sink)
        try:
            yield
        finally:
            sinks.remove(sink)
            if not sinks:
                del self._calls[server]

    def user_seconds(self, server: str) -> float:
        """How long questions of ``server`` have waited for the user so far (a call's clock does not
        count that time: a person filling a form is not the server being slow)."""
        now = time.monotonic()
        return self._asked_s.get(server, 0.0) + sum(now - t for t in self._asking.get(server, []))

    def busy(self, server: str) -> bool:
        """Whether a call that can carry a question runs on ``server`` now."""
        return bool(self._calls.get(server))

    async def elicit(self, server: str, message: str, mode: str, schema: Mapping[str, Any],
                     url: str = "") -> ElicitReply:
        """Ask through the running call and wait; declined when no call can ask, cancelled on timeout."""
        sinks = self._calls.get(server)
        if not sinks:
            log.warning("mcp server %s asked for user input outside a tool call the loop follows: declined", server)
            return ElicitReply("decline")
        request_id = f"e{next(self._ids)}"
        future: asyncio.Future[ElicitReply] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        asked = time.monotonic()
        self._asking.setdefault(server, []).append(asked)
        try:
            sinks[0](ElicitAsk(request_id, server, message, mode, dict(schema), url))
            reply = await asyncio.wait_for(future, self._answer_wait_s)
        except TimeoutError:
            return ElicitReply("cancel")
        finally:
            self._waiting.pop(request_id, None)
            self._asking[server].remove(asked)
            self._asked_s[server] = self._asked_s.get(server, 0.0) + (time.monotonic() - asked)
        if reply.action == "accept" and mode == "form":
            return ElicitReply("accept", with_defaults(schema, reply.content))
        return reply

    def answer(self, request_id: str, action: str, content: Mapping[str, Value]) -> bool:
        """Deliver the user's answer; False when nothing waits on ``request_id``."""
        future = self._waiting.get(request_id)
        if future is None or future.done():
            return False
        future.set_result(ElicitReply(ACTIONS.get(action, "cancel"), dict(content)))
        return True

    def cancel_all(self) -> None:
        """Cancel every waiting elicitation (the gateway shuts down)."""
        for future in self._waiting.values():
            if not future.done():
                future.set_result(ElicitReply("cancel"))
