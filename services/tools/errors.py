"""The tool service's exception tree.

:class:`ToolError` is a failure the model should see: it becomes a ToolResult
with ``code``. The other two are infrastructure failures that become gRPC
statuses with a stable reason.
"""

from __future__ import annotations

from services.kernel.errors import AiCodingError


class ToolsError(AiCodingError):
    """Base of every error the tool service raises on purpose."""

    reason = "tools_error"


class ToolError(ToolsError):
    """A tool call failed in a way the model can act on (``code`` names how)."""

    def __init__(self, code: str, message: str, hint: str = "") -> None:
        super().__init__(message, hint=hint, reason=code)

    @property
    def code(self) -> str:
        return self.reason


class WorkspaceError(ToolsError):
    """OpenSession was given a workspace root the service will not use."""

    reason = "invalid_workspace"


class UnknownSession(ToolsError):
    """A call named a session that is not open."""

    reason = "unknown_session"
