"""The kernel's exception tree and the wire form of stable error reasons.

Two channels (STYLE.md): a failure the model should see is a tool result with
an error code; an infrastructure failure is a gRPC status whose trailing
metadata carries a stable machine reason under ``REASON_KEY``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:  # grpc is imported lazily: CLI commands that never call a service stay fast
    import grpc

REASON_KEY = "ai-coding-reason"


class AiCodingError(Exception):
    """Base of every error ai-coding raises on purpose.

    ``reason`` is a stable machine code; ``hint`` says what to do next. The
    CLI prints ``str(err)`` (one line) and never a traceback.
    """

    reason = "error"

    def __init__(self, message: str, *, hint: str = "", reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if reason is not None:
            self.reason = reason

    def __str__(self) -> str:
        return f"{self.message} {self.hint}".strip() if self.hint else self.message


class ConfigError(AiCodingError):
    """A config file is unreadable or invalid, or a ${VAR} is missing."""

    reason = "config_invalid"


class EndpointError(AiCodingError):
    """A runtime dir, socket or TCP endpoint cannot be used."""

    reason = "endpoint_invalid"


class ServiceUnavailable(AiCodingError):
    """A service cannot be reached."""

    reason = "service_unavailable"


async def abort(context: grpc.aio.ServicerContext, code: grpc.StatusCode, reason: str, message: str) -> NoReturn:
    """End an RPC with ``code``, a readable ``message`` and a stable ``reason``."""
    context.set_trailing_metadata(((REASON_KEY, reason),))
    await context.abort(code, message)
    raise AssertionError("unreachable")  # context.abort always raises


def reason_of(err: grpc.RpcError) -> str:
    """The stable reason a server attached to ``err``, or "" when none."""
    trailing = getattr(err, "trailing_metadata", None)
    if trailing is None:
        return ""
    try:
        items = trailing() or ()
    except Exception:  # a channel-level error has no trailing metadata
        return ""
    for key, value in items:
        if key == REASON_KEY:
            return str(value)
    return ""
