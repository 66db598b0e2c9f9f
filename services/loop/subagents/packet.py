"""The packet a subagent run returns, and how it becomes the parent's tool result."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from services.loop.core.domain import ToolOutcome, Usage

# The child's turn status -> the packet's status (completed / max_iterations / timeout / failed / cancelled).
STATUS_OF_TURN = {"completed": "completed", "max_iterations": "max_iterations", "budget": "max_iterations",
                  "timeout": "timeout", "interrupted": "cancelled", "approval_stop": "cancelled",
                  "failed": "failed"}
# The packet's status -> the tool result's machine code ("" for a plain success).
ERROR_CODES = {"timeout": "child_timeout", "max_iterations": "child_max_iterations", "failed": "child_error",
               "cancelled": "child_error"}
FINAL_TEXT_CHARS = 20_000


@dataclass
class SubagentPacket:
    """What the parent learns from one child run."""

    run_id: str
    name: str
    status: str
    truncated: bool = False
    exit_reason: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    final_text: str = ""
    files_changed: list[str] = field(default_factory=list)
    iterations: int = 0
    elapsed_ms: float = 0.0
    denied_calls: list[str] = field(default_factory=list)
    """Calls of the child that the gate or the user refused (``tool: reason``)."""
    facts: dict[str, Any] | None = None
    schema_valid: bool | None = None
    """None: no output_schema was asked for."""
    schema_errors: list[str] = field(default_factory=list)
    workspace: str = ""
    isolation: str = "shared"
    """How the child worked: ``shared`` (the parent's workspace) or ``worktree``."""
    isolation_note: str = ""
    """Why a child meant for a worktree shared the workspace, or what failed collecting its changes."""
    worktree: dict[str, str] | None = None
    """Changes left in the child's worktree for ``subagent_apply``: path, branch, base, diff_stat."""
    transcript_path: str = ""

    @property
    def error_code(self) -> str:
        return ERROR_CODES.get(self.status, "")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["error"] = self.error_code
        return data

    def outcome(self, call_id: str) -> ToolOutcome:
        """The parent's tool result: the packet as JSON; timeout and failures are errors with their
        machine code, max_iterations is a success that still carries ``child_max_iterations``."""
        text = json.dumps(self.to_json(), ensure_ascii=False, indent=1)
        code = self.error_code
        ok = self.status in ("completed", "max_iterations")
        message = f"the subagent ended {self.status}" + (f" ({self.exit_reason})" if self.exit_reason else "")
        return ToolOutcome(call_id, "subAgent", ok, text, data=self.to_json(), error_code=code,
                           error_message=message if code else "")


def usage_dict(usage: Usage) -> dict[str, int]:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens}
