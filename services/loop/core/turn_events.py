"""What a turn tells its clients: one frozen dataclass per ``TurnEvent`` kind.

The pipeline and its parts build these and hand them to ``EventLog.emit``;
``convert.event_to_proto`` maps each to its proto message by type. Fields are
named and typed as the proto message's fields, so a misspelled or mistyped
field is a mypy error where the event is built, not a broken client stream.

To add an event kind (compaction, subagents, plans, hooks):
1. add the message and a ``TurnEvent.event`` oneof field in your number range
   to protos/ai_coding/v1/loop.proto and regenerate;
2. add a frozen dataclass here, subclassing ``EventBase`` with ``kind`` set
   to the oneof field's name and the message's fields by name, and add it to the
   ``EventBody`` union at the end;
3. mypy then names every consumer that must say what it does with the new kind
   (each matches the union exhaustively); nothing else: convert copies plain fields by name and the known value
   types (``Usage``, ``ToolOutcome``, ``TaskItem``, ``LayerStat``, the status and
   decision enums) by type; tests/unit/loop/test_turn_events.py fails if the
   fields and the proto message disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from services.loop.core.approvals import Decision
from services.loop.core.domain import ModelCall, ToolOutcome, Usage
from services.loop.policy.turn import Status


class EventBase:
    """Base of every event payload; ``kind`` names its ``TurnEvent`` oneof field."""

    kind: ClassVar[str] = ""

    def fields(self) -> dict[str, Any]:
        """The payload's fields by name (shallow), for traces and tests."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]


@dataclass(frozen=True)
class TurnStarted(EventBase):
    kind: ClassVar[str] = "turn_started"
    turn: int
    input: str
    model: str


@dataclass(frozen=True)
class TextDelta(EventBase):
    kind: ClassVar[str] = "text_delta"
    text: str


@dataclass(frozen=True)
class ReasoningDelta(EventBase):
    kind: ClassVar[str] = "reasoning_delta"
    text: str


@dataclass(frozen=True)
class ToolStarted(EventBase):
    kind: ClassVar[str] = "tool_started"
    call_id: str
    tool: str
    arguments_json: str
    title: str = ""


@dataclass(frozen=True)
class ToolChunk(EventBase):
    kind: ClassVar[str] = "tool_chunk"
    call_id: str
    stream: str
    text: str
    progress: float = 0.0
    total: float = 0.0


@dataclass(frozen=True)
class ToolFinished(EventBase):
    kind: ClassVar[str] = "tool_finished"
    result: ToolOutcome


@dataclass(frozen=True)
class ApprovalRequested(EventBase):
    kind: ClassVar[str] = "approval_requested"
    request_id: str
    call_id: str
    tool: str
    arguments_json: str
    preview: str
    reason: str


@dataclass(frozen=True)
class ApprovalResolved(EventBase):
    kind: ClassVar[str] = "approval_resolved"
    request_id: str
    decision: Decision
    source: str


@dataclass(frozen=True)
class QuestionAsked(EventBase):
    kind: ClassVar[str] = "question_asked"
    request_id: str
    question: str
    options: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class BufferRequested(EventBase):
    """The read tool read ``path`` (absolute, inside the workspace): an editor client may answer with its
    buffer's text (unsaved changes); the disk text stands otherwise."""

    kind: ClassVar[str] = "buffer_requested"
    request_id: str
    path: str


@dataclass(frozen=True)
class QuestionResolved(EventBase):
    kind: ClassVar[str] = "question_resolved"
    request_id: str
    answer: str
    source: str


@dataclass(frozen=True)
class TaskItem:
    """One todo item as the client shows it (not an event: a part of TaskListUpdated)."""

    id: str
    content: str
    status: str
    depends_on: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TaskListUpdated(EventBase):
    kind: ClassVar[str] = "task_list_updated"
    goal: str
    items: list[TaskItem] = field(default_factory=list)


@dataclass(frozen=True)
class LayerStat:
    """What one compaction layer did (a part of CompactionEnded)."""

    name: str
    removed: int = 0
    rewritten: int = 0
    skipped: int = 0
    before_tokens: int = 0
    after_tokens: int = 0


@dataclass(frozen=True)
class CompactionStarted(EventBase):
    kind: ClassVar[str] = "compaction_started"
    estimated_tokens: int
    reason: str


@dataclass(frozen=True)
class CompactionEnded(EventBase):
    kind: ClassVar[str] = "compaction_ended"
    layers: list[LayerStat]
    estimated_before: int
    estimated_after: int


@dataclass(frozen=True)
class MemoryRecalled(EventBase):
    kind: ClassVar[str] = "memory_recalled"
    count: int
    note_ids: list[str]
    elapsed_ms: float


@dataclass(frozen=True)
class Degraded(EventBase):
    kind: ClassVar[str] = "degraded"
    component: str
    reason: str


@dataclass(frozen=True)
class SearchStalled(EventBase):
    kind: ClassVar[str] = "search_stalled"
    iteration: int
    level: int
    streak: int
    stale_streak: int
    novel: int
    reason: str


@dataclass(frozen=True)
class ContextAssembled(EventBase):
    kind: ClassVar[str] = "context_assembled"
    instructions_bytes: int
    tools_bytes: int
    history_bytes: int
    tail_bytes: int
    estimated_tokens: int
    tail_parts_json: str
    ceiling_tokens: int = 0
    window_tokens: int = 0


@dataclass(frozen=True)
class ModelStepFinished(EventBase):
    kind: ClassVar[str] = "model_step_finished"
    step: int
    usage: Usage
    latency_ms: float
    finish_reason: str
    call: ModelCall = field(default_factory=ModelCall)
    """The call's facts for traces; a failed call has ``finish_reason`` "error" and ``call.error_type``."""


@dataclass(frozen=True)
class InputQueued(EventBase):
    kind: ClassVar[str] = "input_queued"
    input: str
    position: int


@dataclass(frozen=True)
class Notice(EventBase):
    kind: ClassVar[str] = "notice"
    level: str
    text: str


@dataclass(frozen=True)
class TurnFinished(EventBase):
    """Only ``Turn._end`` builds this, with the status ``policy.turn.decide`` returned."""

    kind: ClassVar[str] = "turn_finished"
    status: Status
    text: str
    handoff: str
    usage: Usage
    iterations: int
    duration_ms: float
    reason: str
    cleared_requests: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class EventsSkipped(EventBase):
    kind: ClassVar[str] = "events_skipped"
    from_seq: int
    to_seq: int
    hint: str


@dataclass(frozen=True)
class HookRun(EventBase):
    """One hook ran (services/loop/hooks): where, which, how long, and what came of it."""

    kind: ClassVar[str] = "hook_run"
    point: str
    hook: str
    hook_kind: str
    duration_ms: float
    outcome: str
    detail: str = ""
    call_id: str = ""


@dataclass(frozen=True)
class SkillCatalogChanged(EventBase):
    """The skill catalog in the system message changed: one declared prompt-cache break."""

    kind: ClassVar[str] = "skill_catalog_changed"
    skills: int
    catalog_chars: int
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    truncated: bool = False
# -- plans and the acceptance gate (services/loop/plans) --


@dataclass(frozen=True)
class AcceptanceChecked(EventBase):
    kind: ClassVar[str] = "acceptance_checked"
    item_id: str
    statement: str
    command: str
    exit_code: int
    passed: bool
    output_tail: str = ""
    duration_ms: float = 0.0
    error: str = ""


@dataclass(frozen=True)
class PlanStepStarted(EventBase):
    kind: ClassVar[str] = "plan_step_started"
    index: int
    total: int
    item_id: str
    content: str


@dataclass(frozen=True)
class PlanStepReceipt(EventBase):
    kind: ClassVar[str] = "plan_step_receipt"
    index: int
    total: int
    item_id: str
    content: str
    outcome: str
    grade: str
    attested: bool = True
    """False for an item the model marked done outside its step (grade ``fiat``)."""
    attempts: int = 0
    model_steps: int = 0
    tokens: int = 0
    duration_ms: float = 0.0
    verify: str = ""
    note: str = ""


@dataclass(frozen=True)
class PlanReport(EventBase):
    kind: ClassVar[str] = "plan_report"
    goal: str
    total: int
    done: int
    unproven: list[str] = field(default_factory=list)
    text: str = ""


@dataclass(frozen=True)
class LedgerUpdated(EventBase):
    kind: ClassVar[str] = "ledger_updated"
    open: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SubagentScope:
    """Which child an event comes from (the ``TurnEvent.scope`` envelope field; None: the session's own)."""

    run_id: str
    name: str
    call_id: str = ""
    task: str = ""


@dataclass(frozen=True)
class SubagentStarted(EventBase):
    kind: ClassVar[str] = "subagent_started"
    run_id: str
    name: str
    task: str
    background: bool
    call_id: str
    workspace: str


@dataclass(frozen=True)
class SubagentFinished(EventBase):
    kind: ClassVar[str] = "subagent_finished"
    run_id: str
    name: str
    status: str
    truncated: bool
    exit_reason: str
    usage: Usage
    elapsed_ms: float
    packet_json: str


@dataclass(frozen=True)
class SubagentTaskDone(EventBase):
    """A background child ended; delivered in the session that started it (never a tool message)."""

    kind: ClassVar[str] = "background_task_done"
    run_id: str
    name: str
    status: str
    summary: str
    elapsed_ms: float
    usage: Usage
    origin_session_id: str
    transcript_path: str


EventBody = (TurnStarted | TextDelta | ReasoningDelta | ToolStarted | ToolChunk | ToolFinished |
    ApprovalRequested | ApprovalResolved | QuestionAsked | QuestionResolved | BufferRequested | TaskListUpdated |
    CompactionStarted | CompactionEnded | MemoryRecalled | Degraded | SearchStalled | ContextAssembled |
    ModelStepFinished | InputQueued | Notice | TurnFinished | EventsSkipped | HookRun | SkillCatalogChanged |
    AcceptanceChecked | PlanStepStarted | PlanStepReceipt | PlanReport | LedgerUpdated | SubagentStarted |
    SubagentFinished | SubagentTaskDone)
"""The closed union of event payloads: match it with ``typing.assert_never`` in the last case, and
mypy reports every consumer that does not handle a new kind."""


def body_classes() -> list[type[EventBase]]:
    """Every event payload class (convert's table and the proto-agreement test use it)."""
    return list(EventBase.__subclasses__())
