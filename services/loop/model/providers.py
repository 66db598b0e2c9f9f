"""The provider table: five OpenAI-compatible families, each row a set of data fields.

A row gives its default ``base_url`` (``provider: deepseek`` needs no endpoint),
the conventional environment variable holding its key, and the quirks of what
goes out, as fields a model entry can set for itself (so the same server behind
``provider: generic``, a proxy or an aggregator, works too; see settings.py):

- ``thinking_format`` (:func:`thinking_options`): how thinking on/off and effort are
  sent. ``deepseek``: ``thinking: {type: enabled|disabled}`` plus ``reasoning_effort``;
  ``qwen`` (DashScope): ``enable_thinking``, no effort knob in Chat Completions;
  ``effort`` (OpenAI, Ollama, most servers): ``reasoning_effort``, where ``none`` is off.
- ``echo_reasoning`` (:func:`with_reasoning`): DeepSeek's thinking mode requires the
  ``reasoning_content`` of the assistant messages of every user turn that made tool
  calls in all later requests (HTTP 400 otherwise) and ignores it on turns without
  tool calls, so it is sent exactly there; servers without the rule never get it.

No code below branches on a provider's name: a quirk is a field of the row, and a
model entry's own field wins over its row's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

REASONING_KEY = "reasoning"
"""Where the loop keeps an assistant message's reasoning in its history (never sent as is)."""


class ThinkingFormat(StrEnum):
    """How a server reads thinking on/off and its effort."""

    EFFORT = "effort"
    """``reasoning_effort`` (``none`` = off): OpenAI, Ollama, vLLM, llama.cpp, most proxies."""
    DEEPSEEK = "deepseek"
    """``thinking: {type: enabled|disabled}`` plus ``reasoning_effort``."""
    QWEN = "qwen"
    """``enable_thinking``; Qwen's Chat Completions has no effort setting."""

    @property
    def takes_effort(self) -> bool:
        """Whether ``reasoning_effort`` means anything to a server of this format."""
        return self is not ThinkingFormat.QWEN


@dataclass(frozen=True)
class Provider:
    """One row of the provider table."""

    name: str
    default_base_url: str
    key_env: str  # "" when the provider needs no key
    thinking_format: ThinkingFormat = ThinkingFormat.EFFORT
    echo_reasoning: bool = False
    """Send earlier reasoning back (as ``reasoning_content``) on tool-calling turns while thinking is on."""


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        Provider("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY",
                 thinking_format=ThinkingFormat.DEEPSEEK, echo_reasoning=True),
        Provider("qwen", "https://dashscope.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY",
                 thinking_format=ThinkingFormat.QWEN),
        Provider("ollama", "http://localhost:11434/v1", ""),
        Provider("generic", "", ""),
    )
}

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def _host_port(url: str) -> tuple[str, int] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if not host:
        return None
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return ("localhost" if host in _LOOPBACK else host), port


def infer_provider(base_url: str) -> str:
    """The provider whose default endpoint has the same host *and* port, else "generic".

    Host alone is not enough: ``http://localhost:8000/v1`` (vLLM, llama.cpp) is
    not ollama, whose default is ``localhost:11434``.
    """
    target = _host_port(base_url)
    if target is None:
        return "generic"
    for provider in PROVIDERS.values():
        if provider.default_base_url and _host_port(provider.default_base_url) == target:
            return provider.name
    return "generic"


def get_provider(name: str) -> Provider | None:
    """The row for ``name`` (case-insensitive), or None when unknown."""
    return PROVIDERS.get(name.strip().lower())


def thinking_options(fmt: ThinkingFormat, thinking: bool | None, effort: str) -> dict[str, Any]:
    """The request fields that set thinking on/off and its effort, the way a ``fmt`` server reads them.

    ``thinking`` None and ``effort`` "" leave the endpoint's default (nothing is sent).
    """
    out: dict[str, Any] = {}
    if fmt is ThinkingFormat.DEEPSEEK:
        if thinking is not None:
            out["thinking"] = {"type": "enabled" if thinking else "disabled"}
        if effort and thinking is not False:
            out["reasoning_effort"] = effort
    elif fmt is ThinkingFormat.QWEN:
        if thinking is not None:
            out["enable_thinking"] = thinking
    elif thinking is False:
        out["reasoning_effort"] = "none"
    elif effort:
        out["reasoning_effort"] = effort
    return out


def echoes_reasoning(echo: bool, thinking: bool | None) -> bool:
    """True when earlier reasoning goes back: the entry (or its row) says so and thinking is not off."""
    return echo and thinking is not False


def with_reasoning(messages: list[dict[str, Any]], echo: bool) -> list[dict[str, Any]]:
    """``messages`` as sent: stored reasoning dropped, or (``echo``) sent as ``reasoning_content``
    on the assistant messages of each user turn that made tool calls.

    Messages without reasoning are passed through unchanged (the list is copied only when needed).
    """
    if not any(REASONING_KEY in m for m in messages):
        return messages
    in_tool_turn = _tool_turns(messages) if echo else [False] * len(messages)
    out: list[dict[str, Any]] = []
    for message, keep in zip(messages, in_tool_turn, strict=True):
        if REASONING_KEY not in message:
            out.append(message)
            continue
        sent = {k: v for k, v in message.items() if k != REASONING_KEY}
        if keep and message.get("role") == "assistant" and message[REASONING_KEY]:
            sent["reasoning_content"] = message[REASONING_KEY]
        out.append(sent)
    return out


def _tool_turns(messages: Sequence[Mapping[str, Any]]) -> list[bool]:
    """Per message: does the user turn it belongs to (the span up to the next user message) make tool calls?"""
    flags = [False] * len(messages)
    start = 0
    for end in [n for n, m in enumerate(messages) if m.get("role") == "user"] + [len(messages)]:
        span = range(start, end)
        if any(messages[n].get("role") == "assistant" and messages[n].get("tool_calls") for n in span):
            for n in span:
                flags[n] = True
        start = end
    return flags


# Model families whose servers often leave ``<think>...</think>`` in the answer text (Qwen3 and
# QwQ without a reasoning parser, DeepSeek-R1 and its distills on llama.cpp with
# ``--reasoning-format none``): matched against the model id sent, lower-cased.
THINK_TAG_FAMILIES = ("qwen3", "qwq", "deepseek-r1", "r1-distill")


def think_tags_by_family(model_id: str) -> bool:
    """Whether ``<think>`` blocks in the answer are read as reasoning when the entry does not say."""
    lowered = model_id.lower()
    return any(family in lowered for family in THINK_TAG_FAMILIES)


def server_of(url: str) -> tuple[str, int]:
    """``(host, port)`` of an endpoint URL as traces name it (``server.address`` / ``server.port``)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "", 0
    return (parts.hostname or ""), port or (443 if parts.scheme == "https" else 80)
