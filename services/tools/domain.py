"""Plain types the tool service works with (protobuf stays in convert.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolOutput:
    """What a successful tool call returns: text for the model, data for programs."""

    output: str
    data: dict[str, Any] = field(default_factory=dict)
    limit_hit: str = ""
    ok: bool = True
    error_code: str = ""
    error_message: str = ""
    error_hint: str = ""


@dataclass
class ToolCallResult:
    """The one result that ends a CallTool stream."""

    call_id: str
    tool: str
    ok: bool
    output: str
    data: dict[str, Any] = field(default_factory=dict)
    error_code: str = ""
    error_message: str = ""
    error_hint: str = ""
    duration_ms: float = 0.0
    limit_hit: str = ""


@dataclass
class Chunk:
    """A piece of streamed output."""

    call_id: str
    stream: str
    text: str


@dataclass(frozen=True)
class SandboxPolicy:
    """The sandbox a session actually gets."""

    mode: str
    network: bool
    """The host's network (``tools.sandbox.network: host``)."""
    egress: bool = False
    """Only the egress proxy (``tools.sandbox.network: proxy``)."""


@dataclass
class SessionRequest:
    """What OpenSession asked for (trusted for nothing)."""

    session_id: str
    workspace_root: str
    extra_roots: list[str] = field(default_factory=list)
    sandbox_mode: str = ""
    network: bool | None = None
    """None when the request has no sandbox options (the service's config decides alone)."""
    secret_env_names: list[str] = field(default_factory=list)


@dataclass
class OpenedSession:
    """What OpenSession answers."""

    workspace_root: str
    warnings: list[str]
    sandbox: SandboxPolicy
    extra_roots: list[str]


Emit = Callable[[str, str], Awaitable[None]]
"""Send one chunk: (stream, text)."""
