"""The loop's value types: messages, token usage, tool calls and their outcomes, model steps.

Plain data shared by the pipeline, the policies, the adapters and the typed
events (services/loop/core/turn_events.py); services/loop/core/ports.py re-exports them
next to the Protocols that carry them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from services.loop.policy.codes import ErrorCode

CALL_CAP_WITHOUT_CLOCK_S = 3600.0
"""A call that crosses to another service gets a finite deadline even when the turn has no clock
(``ai.turn_timeout_seconds: 0``): the longest the loop waits for one tool or MCP call then."""

Message = dict[str, Any]
"""A Chat Completions message dict (``role``, ``content``, ``tool_calls``, ``tool_call_id``)."""



class InterruptScope(Enum):
    """What a client's interrupt cancels."""

    BATCH = "batch"
    """The running tool batch (the turn goes on)."""
    TURN = "turn"
    """The whole turn."""


@dataclass
class Usage:
    """Normalized token usage; ``None`` means the provider did not say (never a guess)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int | None = None
    cache_creation_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    prefix_ratio: float | None = None

    def add(self, other: Usage) -> Usage:
        def opt(a: float | None, b: float | None) -> Any:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_tokens=opt(self.cached_tokens, other.cached_tokens),
            cache_creation_tokens=opt(self.cache_creation_tokens, other.cache_creation_tokens),
            reasoning_tokens=opt(self.reasoning_tokens, other.reasoning_tokens),
            cost_usd=opt(self.cost_usd, other.cost_usd),
            prefix_ratio=other.prefix_ratio if other.prefix_ratio is not None else self.prefix_ratio,
        )


@dataclass
class ToolCall:
    """One tool call assembled from the stream."""

    id: str
    name: str
    arguments_json: str
    # Set when arguments_json is not a JSON object: the loop turns it into an
    # error result the model sees ("invalid_arguments"), never a crash.
    parse_error: str = ""
    # Set with parse_error when the stream hit the output limit inside this call's arguments.
    truncated: bool = False

    def arguments(self) -> dict[str, Any]:
        value = json.loads(self.arguments_json or "{}")
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class ModelCall:
    """Facts of one model call for traces (the GenAI conventions' inference span); "" / 0 = unknown."""

    provider: str = ""
    """The provider row's name (``gen_ai.provider.name``)."""
    request_model: str = ""
    """The model id sent (``gen_ai.request.model``), not the config entry's name."""
    server_address: str = ""
    server_port: int = 0
    stream: bool = False
    response_model: str = ""
    response_id: str = ""
    first_chunk_ms: float = 0.0
    """From sending the request to the first chunk of the final attempt's reply (0: none came)."""
    error_type: str = ""
    """The stable reason of a failed call (``rate_limited``, ``context_length``...); "" = it succeeded."""
    attempts: int = 0
    duration_ms: float = 0.0
    """How long a failed call took, retries included (a finished step has ``latency_ms``)."""


@dataclass
class StepResult:
    """What one model step produced."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = ""
    latency_ms: float = 0.0
    call: ModelCall = field(default_factory=ModelCall)


@dataclass
class ToolOutcome:
    """A finished tool call as the pipeline records it."""

    call_id: str
    tool: str
    ok: bool
    output: str
    data: dict[str, Any] = field(default_factory=dict)
    error_code: str = ""
    error_message: str = ""
    duration_ms: float = 0.0
    limit_hit: str = ""

    @classmethod
    def error(cls, call_id: str, tool: str, code: ErrorCode, message: str, *, limit_hit: str = "") -> ToolOutcome:
        """A failed call the model sees as ``code: message``."""
        return cls(call_id, tool, False, f"{code}: {message}", error_code=code, error_message=message,
                   limit_hit=limit_hit)


@dataclass
class ToolChunkEvent:
    call_id: str
    stream: str
    text: str


@dataclass(frozen=True)
class MemorySearchResult:
    """What ``memory_search`` gives the model, and whether recall ran past its budget."""

    text: str
    timed_out: bool = False


@dataclass(frozen=True)
class McpCatalog:
    """What the gateway offers right now."""

    text: str
    """The budgeted catalog for the ``<mcp-catalog>`` block of the system message."""
    permissions: dict[str, str] = field(default_factory=dict)
    """``server__tool`` -> "allow" / "warn" / "deny" (the servers' own permission settings)."""
    degraded: dict[str, str] = field(default_factory=dict)
    """Server name -> why it failed (sticky; the loop reports each server once)."""
    described: dict[str, str] = field(default_factory=dict)
    """``server__tool`` -> what ``mcp_describe`` answers (full description and input schema)."""
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``server__tool`` -> its input schema as the server declared it (``mcp_call`` checks input with it)."""


def wait_limit(remaining: float) -> float | None:
    """``remaining`` seconds as an asyncio timeout: None (no limit) when the turn has no clock."""
    return None if math.isinf(remaining) else remaining


ANSWER_GRACE_S = 1.0
"""How long past the turn's clock a wait for the user's answer may last."""


def answer_wait_limit(remaining: float) -> float | None:
    """How long a wait for the user's answer (an approval, a question) may last when the turn has
    ``remaining`` seconds: past the clock by ``ANSWER_GRACE_S``, so the turn's clock, which ends the
    turn and clears what is still pending as ``turn_ended``, is what ends it (with the same deadline
    the two timers raced: under load the answer's fired first and the turn cleared nothing)."""
    return wait_limit(max(remaining, 0.0) + ANSWER_GRACE_S)


def call_deadline(remaining: float, floor: float = 0.5) -> float:
    """The deadline to give a call to another service: what the clock leaves (at least ``floor``),
    capped at ``CALL_CAP_WITHOUT_CLOCK_S``."""
    return max(min(remaining, CALL_CAP_WITHOUT_CLOCK_S), floor)
