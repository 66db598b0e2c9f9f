"""The loop service's one exception root, ``LoopError``, and the errors under it.

Every error the loop raises on purpose is a ``LoopError`` (a kernel
``AiCodingError``: a stable ``reason`` code, a readable message, a hint). Two
places catch them: the gRPC boundary (request errors such as ``SessionNotFound``
become statuses) and the turn (``pipeline.Turn._guarded``): an error that ends a
turn says which turn fact it stands for (``apply_to``), and ``policy.turn.decide``
maps the facts to the status; nothing else chooses a turn's status. A failure the
model should see instead is a tool result, never an exception.
"""

from __future__ import annotations

from dataclasses import replace

from services.kernel.errors import AiCodingError
from services.loop.policy.turn import Facts


class LoopError(AiCodingError):
    """Base of errors the loop raises on purpose."""

    reason = "loop_error"

    def apply_to(self, facts: Facts) -> Facts:
        """The turn's facts once this error ended it (default: the engine failed, for this reason)."""
        return replace(facts, engine_error=f"{self.reason}: {self.message}")


class SessionNotFound(LoopError):
    """No session with that id (or the prefix is ambiguous)."""

    reason = "session_not_found"


class BadRequest(LoopError):
    """A client message is missing something or malformed."""

    reason = "bad_request"


class ModelError(LoopError):
    """A model step failed after its retries. ``reason`` is stable: ``context_length``,
    ``rate_limited``, ``server_error``, ``connection``, ``auth``, ``timeout``, ``bad_request``."""

    reason = "model_error"

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message, reason=reason)

    def apply_to(self, facts: Facts) -> Facts:
        return replace(facts, engine_error=f"model {self.reason}: {self.message}")


class ApprovalStop(LoopError):
    """The user answered STOP to an approval request."""

    reason = "approval_stop"

    def __init__(self, message: str = "the user answered stop to an approval") -> None:
        super().__init__(message)

    def apply_to(self, facts: Facts) -> Facts:
        return replace(facts, approval_stopped=True)


class AuxiliaryError(LoopError):
    """An auxiliary service (memory, MCP gateway) failed; ``component`` names it and
    ``detail`` says what happened. A tool call that meets it gets an error result and the
    turn a Degraded event; it never ends a turn."""

    def __init__(self, component: str, detail: str) -> None:
        super().__init__(f"{component}: {detail}", reason=f"{component}_unavailable")
        self.component = component
        self.detail = detail


class ToolServiceError(LoopError):
    """A control call to the tools service failed (the message is one readable line)."""

    reason = "tool_service_unavailable"


class SessionUnreadable(LoopError):
    """Nothing of a session could be recovered: its snapshot and its journal are both corrupt."""

    reason = "session_unreadable"


class SessionStorageError(LoopError):
    """The session files cannot be written (read-only or full disk, permissions)."""

    reason = "session_storage"
