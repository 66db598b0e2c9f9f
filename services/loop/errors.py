"""The loop service's exception tree (caught only at the gRPC boundary)."""

from __future__ import annotations

from services.kernel.errors import AiCodingError


class LoopError(AiCodingError):
    """Base of errors the loop raises on purpose."""

    reason = "loop_error"


class SessionNotFound(LoopError):
    """No session with that id (or the prefix is ambiguous)."""

    reason = "session_not_found"


class SessionBusy(LoopError):
    """The request needs an idle session but a turn is running."""

    reason = "session_busy"


class BadRequest(LoopError):
    """A client message is missing something or malformed."""

    reason = "bad_request"


class AuxiliaryError(Exception):
    """An auxiliary service (memory, MCP gateway) failed; ``component`` names it."""

    def __init__(self, component: str, reason: str) -> None:
        super().__init__(f"{component}: {reason}")
        self.component = component
        self.reason = reason


class SessionUnreadable(LoopError):
    """Nothing of a session could be recovered: its snapshot and its journal are both corrupt."""

    reason = "session_unreadable"


class SessionStorageError(LoopError):
    """The session files cannot be written (read-only or full disk, permissions)."""

    reason = "session_storage"
