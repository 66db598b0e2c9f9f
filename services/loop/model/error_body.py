"""What an endpoint's error reply says, whatever its shape (pure).

The transport (like the ``openai`` package before it) puts the decoded body of an HTTP error in ``exc.body``
(the ``error`` member when the body is a mapping that has one, the whole body
otherwise; the raw text when it is not JSON) and its own ``exc.message`` reads
only ``error.message``, so every other shape showed as ``Error code: 400``.
Shapes seen in the wild, all read here:

- OpenAI: ``{"error": {"message", "type", "code", "param"}}``; vLLM puts the same
  fields at the top level (``{"object": "error", "message": ...}``);
- LM Studio: ``{"error": "the message"}``;
- Gemini's OpenAI endpoint: ``[{"error": {"code", "message", "status"}}]``;
- FastAPI / pydantic: ``{"detail": [{"type": "extra_forbidden", "loc": [...], "msg"}]}``;
- a proxy's plain-text 502 and an HTML 503 page.

Also here: which request field a 400 rejects (:func:`rejected_param`) and the
context window an overflow error states (:func:`stated_window`).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# A server's own words, on one line: long enough for a whole sentence of any provider's error (a
# 300-character quota message is shown whole, tests/e2e/test_cli_screen.py), short enough that an
# HTML error page reduced to text stays one readable line.
MAX_DETAIL_CHARS = 1000
_TAG = re.compile(r"<[^>]+>")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_HEADING = re.compile(r"<h1[^>]*>(.*?)</h1>", re.IGNORECASE | re.DOTALL)
_SCRIPT = re.compile(r"<(script|style)[^>]*>.*?</\1>", re.IGNORECASE | re.DOTALL)
_REJECTS = re.compile(
    r"unknown|unrecognized|unrecognised|extra_forbidden|not permitted|not allowed|unsupported|not supported"
    r"|unexpected|invalid|not a valid|does not support|no such",
    re.IGNORECASE,
)
# "... context size (8192 tokens)" (llama.cpp), "maximum number of tokens allowed (1048576)" (Gemini),
# "maximum context length is 128000 tokens" (OpenAI, vLLM), "context window of 32768 tokens".
_WINDOW = (
    re.compile(r"available context size \((\d+) tokens?\)", re.IGNORECASE),
    re.compile(r"maximum number of tokens allowed \((\d+)\)", re.IGNORECASE),
    re.compile(r"maximum context length is (\d+) tokens", re.IGNORECASE),
    re.compile(r"context window (?:of|is) (\d+) tokens", re.IGNORECASE),
)
_WINDOW_FIELDS = ("n_ctx", "max_context_length", "context_window")


@dataclass(frozen=True)
class ErrorReply:
    """An error reply reduced to what the client decides on."""

    message: str
    """One readable line: the server's own words."""
    code: str = ""
    type: str = ""
    param: str = ""
    fields: Mapping[str, Any] | None = None
    """The error object when it was one (extra numbers such as ``n_ctx`` live there)."""

    @property
    def searchable(self) -> str:
        """Message, code, type and param in one string, for the classifiers."""
        return " ".join(x for x in (self.message, self.code, self.type, self.param) if x)


def one_line(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _html_text(text: str) -> str:
    for pattern in (_TITLE, _HEADING):
        found = pattern.search(text)
        if found and _TAG.sub("", found.group(1)).strip():
            return html.unescape(_TAG.sub("", found.group(1)))
    return html.unescape(_TAG.sub(" ", _SCRIPT.sub(" ", text)))


def _looks_like_html(text: str) -> bool:
    head = text.lstrip()[:200].lower()
    return head.startswith(("<!doctype html", "<html")) or "<body" in head or "<title" in head


def _from_detail(detail: Any) -> str:
    """FastAPI/pydantic ``detail``: a string or a list of ``{type, loc, msg}``."""
    if isinstance(detail, str):
        return detail
    parts: list[str] = []
    for item in detail if isinstance(detail, list) else []:
        if isinstance(item, Mapping):
            loc = ".".join(str(x) for x in item.get("loc", ()) if x != "body") if item.get("loc") else ""
            kind = f" [{item['type']}]" if item.get("type") else ""
            parts.append(f"{loc}: {item.get('msg', '')}{kind}".strip(": "))
    return "; ".join(parts)


def _from_mapping(body: Mapping[str, Any]) -> ErrorReply | None:
    inner = body.get("error")
    if isinstance(inner, Mapping):
        return _from_mapping(inner)
    if isinstance(inner, str) and inner.strip():  # LM Studio
        return ErrorReply(inner.strip())
    message = body.get("message")
    if not isinstance(message, str) or not message.strip():
        message = _from_detail(body.get("detail"))
    if not message:
        return None
    return ErrorReply(message.strip(), str(body.get("code") or ""), str(body.get("type") or body.get("status") or ""),
                      str(body.get("param") or ""), body)


def read_error(body: object, fallback: str = "") -> ErrorReply:
    """The error reply in ``body`` (``exc.body`` of a transport StatusError), or ``fallback`` when it says nothing."""
    reply: ErrorReply | None = None
    if isinstance(body, Mapping):
        reply = _from_mapping(body)
    elif isinstance(body, list):  # Gemini: a list of error envelopes
        for item in body:
            if isinstance(item, Mapping) and (reply := _from_mapping(item)) is not None:
                break
    elif isinstance(body, str | bytes):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        text = _html_text(text) if _looks_like_html(text) else text
        if text.strip():
            reply = ErrorReply(text)
    if reply is None:
        return ErrorReply(one_line(fallback) or "the reply had no readable message")
    return ErrorReply(one_line(reply.message), reply.code, reply.type, reply.param, reply.fields)


def rejected_param(reply: ErrorReply, sent: Iterable[str]) -> str:
    """The sent request field a 400 refuses as unknown or unsupported, or "" when it names none.

    The field must be named in the reply (quoted, as a pydantic ``loc`` or as ``param``) next to a
    word of refusal; ``messages``, ``model`` and the other core fields are never offered here.
    """
    text = reply.searchable
    if not _REJECTS.search(text):
        return ""
    for name in sent:
        if reply.param == name or re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text):
            return name
    return ""


def stated_window(reply: ErrorReply) -> int | None:
    """The context window (tokens) an overflow error states, when it states one."""
    fields = reply.fields or {}
    for key in _WINDOW_FIELDS:
        value = fields.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    for pattern in _WINDOW:
        found = pattern.search(reply.message)
        if found:
            return int(found.group(1))
    return None
