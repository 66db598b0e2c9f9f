"""The packet a subagent run returns, and how it becomes the parent's tool result."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, assert_never

from services.loop.core.domain import ToolOutcome, Usage
from services.loop.policy.turn import Status

FINAL_TEXT_CHARS = 20_000


class PacketStatus(StrEnum):
    """How a child run ended, as the packet, the events and /tasks say it (the value is the wire form)."""

    COMPLETED = "completed"
    MAX_ITERATIONS = "max_iterations"
    """The child's step or token budget ran out: a success that is marked truncated."""
    TIMEOUT = "timeout"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def truncated(self) -> bool:
        """Whether the child stopped before it finished its task."""
        match self:
            case PacketStatus.MAX_ITERATIONS | PacketStatus.TIMEOUT | PacketStatus.CANCELLED:
                return True
            case PacketStatus.COMPLETED | PacketStatus.FAILED:
                return False
            case _:
                assert_never(self)

    @property
    def ok(self) -> bool:
        """Whether the parent's tool result is a success (max_iterations still carries its code)."""
        match self:
            case PacketStatus.COMPLETED | PacketStatus.MAX_ITERATIONS:
                return True
            case PacketStatus.TIMEOUT | PacketStatus.FAILED | PacketStatus.CANCELLED:
                return False
            case _:
                assert_never(self)

    @property
    def error_code(self) -> str:
        """The tool result's machine code ("" for a plain success)."""
        match self:
            case PacketStatus.COMPLETED:
                return ""
            case PacketStatus.MAX_ITERATIONS:
                return "child_max_iterations"
            case PacketStatus.TIMEOUT:
                return "child_timeout"
            case PacketStatus.FAILED | PacketStatus.CANCELLED:
                return "child_error"
            case _:
                assert_never(self)


def status_of_turn(status: Status | None) -> PacketStatus:
    """The packet's status for the way the child's turn ended (None: it never ended properly)."""
    match status:
        case Status.COMPLETED:
            return PacketStatus.COMPLETED
        case Status.MAX_ITERATIONS | Status.BUDGET:
            return PacketStatus.MAX_ITERATIONS
        case Status.TIMEOUT:
            return PacketStatus.TIMEOUT
        case Status.INTERRUPTED | Status.APPROVAL_STOP:
            return PacketStatus.CANCELLED
        case Status.FAILED | Status.ACCEPTANCE_FAILED | Status.PLAN_INCOMPLETE | None:
            return PacketStatus.FAILED
        case _:
            assert_never(status)


@dataclass
class SubagentPacket:
    """What the parent learns from one child run."""

    run_id: str
    name: str
    status: PacketStatus
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
        return self.status.error_code

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = str(self.status)
        data["error"] = self.error_code
        return data

    def outcome(self, call_id: str) -> ToolOutcome:
        """The parent's tool result: the packet as JSON; timeout and failures are errors with their
        machine code, max_iterations is a success that still carries ``child_max_iterations``."""
        text = json.dumps(self.to_json(), ensure_ascii=False, indent=1)
        code = self.error_code
        ok = self.status.ok
        message = f"the subagent ended {self.status}" + (f" ({self.exit_reason})" if self.exit_reason else "")
        return ToolOutcome(call_id, "subAgent", ok, text, data=self.to_json(), error_code=code,
                           error_message=message if code else "")


def usage_dict(usage: Usage) -> dict[str, int]:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens}


def task_label(task: str) -> str:
    """A run's label from its task: the first 40 characters of it on one line."""
    head = " ".join(task.split())
    return head[:40] + ("…" if len(head) > 40 else "")


def packet_summary(packet: SubagentPacket) -> str:
    """One line of what a run gave (its answer, else why it ended)."""
    text = " ".join(packet.final_text.split()) or packet.exit_reason or packet.status
    return text[:160]


def read_json_object(path: Path) -> dict[str, Any] | None:
    """A run's JSON file (marker or transcript) as an object; None when it is not one or unreadable."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
