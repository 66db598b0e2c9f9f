"""The loop's seams: plain dataclasses and Protocols the pipeline depends on.

The pipeline never sees protobuf or the openai package: the model engine
(services/loop/model), the tool/memory/MCP gRPC adapters and the policies all
meet the orchestrator here. Messages are Chat Completions dicts
(``{"role": ..., "content": ..., "tool_calls": [...], "tool_call_id": ...}``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, Any]


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

    def arguments(self) -> dict[str, Any]:
        import json

        value = json.loads(self.arguments_json or "{}")
        return value if isinstance(value, dict) else {}


@dataclass
class StepResult:
    """What one model step produced."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = ""
    latency_ms: float = 0.0


class ModelError(Exception):
    """A model step failed after its retries. ``reason`` is stable:
    ``context_length``, ``rate_limited``, ``server_error``, ``connection``,
    ``auth``, ``timeout``, ``bad_request``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class ModelClient(Protocol):
    """One streamed Chat Completions step (services/loop/model implements it)."""

    model_name: str

    async def step(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: Callable[[str], None],
        on_reasoning: Callable[[str], None],
        timeout_seconds: float,
        on_reset: Callable[[], None] | None = None,
    ) -> StepResult:
        """Raises ModelError when the step cannot complete.

        ``on_reset`` (optional): called when a stream dropped after deltas were
        delivered and the step is being retried; the caller discards the partial
        text it showed. Without it such a drop fails the step instead.
        """
        ...


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


@dataclass
class ToolChunkEvent:
    call_id: str
    stream: str
    text: str


class ToolRunner(Protocol):
    """Runs workspace tools (the tools service adapter implements it)."""

    async def open_session(self, session_id: str, workspace: str, secret_env_names: list[str]) -> list[str]:
        """Returns warnings (e.g. sandbox disabled)."""
        ...

    async def close_session(self, session_id: str) -> None: ...

    async def list_tools(self, session_id: str) -> list[dict[str, Any]]:
        """OpenAI-style tool dicts with an extra "x-permission" and "x-parallel-safe"."""
        ...

    def call(
        self, session_id: str, call_id: str, tool: str, arguments_json: str, timeout_seconds: float
    ) -> AsyncIterator[ToolChunkEvent | ToolOutcome]:
        """Chunks, then exactly one ToolOutcome. ``tool_service_unavailable`` when down."""
        ...

    async def dry_run(self, session_id: str, call_id: str, tool: str, arguments_json: str,
                      timeout_seconds: float) -> ToolOutcome:
        """Preview a write or edit without running it: ok with the real unified diff against the
        file in ``output``, or the error the call would meet (``edit_no_match``, ``stale_read``...).
        Raises TimeoutError when no answer came within ``timeout_seconds``, another exception when the
        service is not reachable."""
        ...
