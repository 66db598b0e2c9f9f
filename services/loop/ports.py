"""The loop's seams: plain dataclasses and Protocols the pipeline depends on.

The pipeline never sees protobuf or the openai package: the model engine
(services/loop/model), the tool/memory/MCP gRPC adapters and the policies all
meet the orchestrator here. Messages are Chat Completions dicts
(``{"role": ..., "content": ..., "tool_calls": [...], "tool_call_id": ...}``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from services.loop.domain import Message, ModelError, StepResult, ToolCall, ToolChunkEvent, ToolOutcome, Usage

__all__ = ["Message", "ModelClient", "ModelError", "StepResult", "ToolCall", "ToolChunkEvent", "ToolOutcome",
           "ToolRunner", "Usage"]


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
