"""The turn events the client shows and answers, as plain values: the view models of a turn.

The wire messages (generated protobuf modules) stop at the connection modules; :mod:`clients.cli.convert`
turns them into these dataclasses, and the renderer, the REPL and the commands work on
these alone. Stdlib only: ``ai-coding --help`` paths import this.

Each turn event kind is one frozen dataclass named after its ``TurnEvent`` oneof field;
:class:`Event` is the envelope (sequence number, turn) around one of them. Sessions are in
:mod:`clients.cli.session_views`, memory notes and MCP servers in :mod:`clients.cli.service_views`.
"""

from __future__ import annotations

import enum
from dataclasses import field

from clients.cli.records import record


class Decision(enum.Enum):
    """An answer to an approval request (``ApprovalDecision``)."""

    UNSPECIFIED = "APPROVAL_DECISION_UNSPECIFIED"
    ALLOW_ONCE = "APPROVAL_DECISION_ALLOW_ONCE"
    ALLOW_ALWAYS = "APPROVAL_DECISION_ALLOW_ALWAYS"
    DENY = "APPROVAL_DECISION_DENY"
    STOP = "APPROVAL_DECISION_STOP"


class TurnStatus(enum.Enum):
    """How a turn ended (``TurnStatus``); the value is the enum name on the wire."""

    UNSPECIFIED = "TURN_STATUS_UNSPECIFIED"
    COMPLETED = "TURN_STATUS_COMPLETED"
    MAX_ITERATIONS = "TURN_STATUS_MAX_ITERATIONS"
    BUDGET = "TURN_STATUS_BUDGET"
    TIMEOUT = "TURN_STATUS_TIMEOUT"
    INTERRUPTED = "TURN_STATUS_INTERRUPTED"
    APPROVAL_STOP = "TURN_STATUS_APPROVAL_STOP"
    FAILED = "TURN_STATUS_FAILED"
    ACCEPTANCE_FAILED = "TURN_STATUS_ACCEPTANCE_FAILED"
    PLAN_INCOMPLETE = "TURN_STATUS_PLAN_INCOMPLETE"


class Scope(enum.Enum):
    """What an interrupt cancels (``InterruptScope``): the running tool batch, or the turn."""

    BATCH = "INTERRUPT_SCOPE_BATCH"
    TURN = "INTERRUPT_SCOPE_TURN"


# ---- parts of events ----


@record
class Usage:
    """Token usage as the provider reported it; ``None`` where it reported nothing."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int | None = None
    cache_creation_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    prefix_ratio: float | None = None


@record
class ToolError:
    """Why a tool call failed: a stable code, the message and what to do about it."""

    code: str = ""
    message: str = ""
    hint: str = ""


@record
class ToolResult:
    """What one tool call returned (``ToolResult``): its output, or the error, and how long it took."""

    call_id: str = ""
    tool: str = ""
    ok: bool = False
    output: str = ""
    data_json: str = ""
    error: ToolError = field(default_factory=ToolError)
    duration_ms: float = 0.0
    limit_hit: str = ""


@record
class TaskItem:
    """One item of the turn's task list, with the ids of the items it waits for."""

    id: str = ""
    content: str = ""
    status: str = ""
    depends_on: tuple[str, ...] = ()


@record
class LayerStat:
    """What one compaction layer did to the history: messages removed, rewritten, skipped; tokens before and after."""

    name: str = ""
    removed: int = 0
    rewritten: int = 0
    skipped: int = 0
    before_tokens: int = 0
    after_tokens: int = 0


# ---- turn events (one per TurnEvent oneof field) ----


@record
class TurnStarted:
    """A turn began with this input (the turn's number in the session, the model it uses)."""

    turn: int = 0
    input: str = ""
    model: str = ""


@record
class TextDelta:
    """A piece of the assistant's streamed answer."""

    text: str = ""


@record
class ReasoningDelta:
    """A piece of the model's streamed reasoning (shown with --verbose)."""

    text: str = ""


@record
class ToolStarted:
    """The model called a tool: its call id, name, arguments (JSON) and the title to show."""

    call_id: str = ""
    tool: str = ""
    arguments_json: str = ""
    title: str = ""


@record
class ToolChunk:
    """Output a running tool produced so far (stdout/stderr text, or progress of a total)."""

    call_id: str = ""
    stream: str = ""
    text: str = ""
    progress: float = 0.0
    total: float = 0.0


@record
class ToolFinished:
    """A tool call ended, with its result."""

    result: ToolResult = field(default_factory=ToolResult)


@record
class ApprovalRequested:
    """The loop asks whether a WARN-level call may run (with a preview of what it changes and why it asks)."""

    request_id: str = ""
    call_id: str = ""
    tool: str = ""
    arguments_json: str = ""
    preview: str = ""
    reason: str = ""


@record
class ApprovalResolved:
    """An approval request was answered: the decision, and by what (user, auto, timeout ...)."""

    request_id: str = ""
    decision: Decision = Decision.UNSPECIFIED
    source: str = ""


@record
class QuestionAsked:
    """The model asks the user a question (``ask_user``), with the choices it offers."""

    request_id: str = ""
    question: str = ""
    options: tuple[str, ...] = ()


@record
class QuestionResolved:
    """A question was answered (the answer, and where it came from)."""

    request_id: str = ""
    answer: str = ""
    source: str = ""


@record
class BufferRequested:
    """The loop asks an editor client for its text of ``path`` (only ``ai-coding acp`` answers)."""

    request_id: str = ""
    path: str = ""


@record
class TaskListUpdated:
    """The turn's task list changed: its goal and every item as it stands now."""

    goal: str = ""
    items: tuple[TaskItem, ...] = ()


@record
class CompactionStarted:
    """The history is being compacted (its estimated size, and why)."""

    estimated_tokens: int = 0
    reason: str = ""


@record
class CompactionEnded:
    """Compaction ended: each layer's work and the estimated size before and after."""

    layers: tuple[LayerStat, ...] = ()
    estimated_before: int = 0
    estimated_after: int = 0


@record
class MemoryRecalled:
    """Notes recalled from memory for this step (how many, their ids, how long it took)."""

    count: int = 0
    note_ids: tuple[str, ...] = ()
    elapsed_ms: float = 0.0


@record
class Degraded:
    """An auxiliary component (memory recall, the sandbox, the session save ...) failed; the turn goes on."""

    component: str = ""
    reason: str = ""


@record
class SearchStalled:
    """The loop found the model searching without progress (the step, how stale, what it does about it)."""

    iteration: int = 0
    level: int = 0
    streak: int = 0
    stale_streak: int = 0
    novel: int = 0
    reason: str = ""


@record
class ContextAssembled:
    """How the request's context was made up: bytes per part, the estimated tokens and the window."""

    instructions_bytes: int = 0
    tools_bytes: int = 0
    history_bytes: int = 0
    tail_bytes: int = 0
    estimated_tokens: int = 0
    tail_parts_json: str = ""
    ceiling_tokens: int = 0
    window_tokens: int = 0


@record
class ModelStepFinished:
    """One model call ended: its step number, token usage, latency and finish reason."""

    step: int = 0
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    finish_reason: str = ""


@record
class InputQueued:
    """Input sent while a turn runs waits for it to end (its text and place in the queue)."""

    input: str = ""
    position: int = 0


@record
class Notice:
    """A line the loop wants shown (its level and text)."""

    level: str = ""
    text: str = ""


@record
class HookRun:
    """A configured hook ran at one point of the turn: which, how long, and what came of it."""

    point: str = ""
    hook: str = ""
    hook_kind: str = ""
    duration_ms: float = 0.0
    outcome: str = ""
    detail: str = ""
    call_id: str = ""


@record
class SkillCatalogChanged:
    """The skill catalog in the system message changed (skills added, removed or edited)."""

    skills: int = 0
    catalog_chars: int = 0
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    truncated: bool = False


@record
class TurnFinished:
    """The turn's final event: how it ended, the answer, usage, steps and duration."""

    status: TurnStatus = TurnStatus.UNSPECIFIED
    text: str = ""
    handoff: str = ""
    usage: Usage = field(default_factory=Usage)
    iterations: int = 0
    duration_ms: float = 0.0
    reason: str = ""
    cleared_requests: tuple[str, ...] = ()


@record
class EventsSkipped:
    """Events this stream will not deliver (a slow reader fell behind); the saved session still has them."""

    from_seq: int = 0
    to_seq: int = 0
    hint: str = ""


@record
class SubagentScope:
    """Which subagent child an event comes from (rendered nested under its subAgent call)."""

    run_id: str = ""
    name: str = ""
    call_id: str = ""
    task: str = ""


@record
class SubagentStarted:
    """A subagent (a child session) began a task, in the foreground or the background."""

    run_id: str = ""
    name: str = ""
    task: str = ""
    background: bool = False
    call_id: str = ""
    workspace: str = ""


@record
class SubagentFinished:
    """A subagent ended: its status, usage, time and the packet its parent got (JSON)."""

    run_id: str = ""
    name: str = ""
    status: str = ""
    truncated: bool = False
    exit_reason: str = ""
    usage: Usage = field(default_factory=Usage)
    elapsed_ms: float = 0.0
    packet_json: str = ""


@record
class BackgroundTaskDone:
    """A background subagent finished (completed, failed or stopped): its summary and where its transcript is."""

    run_id: str = ""
    name: str = ""
    status: str = ""
    summary: str = ""
    elapsed_ms: float = 0.0
    usage: Usage = field(default_factory=Usage)
    origin_session_id: str = ""
    transcript_path: str = ""


@record
class AcceptanceChecked:
    """One acceptance proof's verdict: the command the gate ran, its exit code and output tail."""

    item_id: str = ""
    statement: str = ""
    command: str = ""
    exit_code: int = 0
    passed: bool = False
    output_tail: str = ""
    duration_ms: float = 0.0
    error: str = ""


@record
class PlanStepStarted:
    """A plan step begins: item ``index`` of ``total`` (1-based) runs in its own step session."""

    index: int = 0
    total: int = 0
    item_id: str = ""
    content: str = ""


@record
class PlanStepReceipt:
    """What one plan item came to: its outcome, proof grade, attempts, cost and verify command."""

    index: int = 0
    total: int = 0
    item_id: str = ""
    content: str = ""
    outcome: str = ""
    grade: str = ""
    attested: bool = False
    attempts: int = 0
    model_steps: int = 0
    tokens: int = 0
    duration_ms: float = 0.0
    verify: str = ""
    note: str = ""


@record
class PlanReport:
    """The end of a /plan run: the goal, how many items were done or left unproven, and the report."""

    goal: str = ""
    total: int = 0
    done: int = 0
    unproven: tuple[str, ...] = ()
    text: str = ""


@record
class LedgerUpdated:
    """The uncertainty ledger's open entries changed (one line each)."""

    open: tuple[str, ...] = ()


Body = (TurnStarted | TextDelta | ReasoningDelta | ToolStarted | ToolChunk | ToolFinished | ApprovalRequested
        | ApprovalResolved | QuestionAsked | QuestionResolved | BufferRequested | TaskListUpdated | CompactionStarted
        | CompactionEnded | MemoryRecalled | Degraded | SearchStalled | ContextAssembled | ModelStepFinished
        | InputQueued | Notice | TurnFinished | EventsSkipped | HookRun | SkillCatalogChanged | SubagentStarted
        | SubagentFinished | BackgroundTaskDone | AcceptanceChecked | PlanStepStarted | PlanStepReceipt
        | PlanReport | LedgerUpdated)


@record
class Event:
    """One turn event: its per-session sequence number and what happened (``None``: a kind
    this client does not know, sent by a newer loop; it is counted, never shown)."""

    seq: int = 0
    session_id: str = ""
    turn: int = 0
    ts: float = 0.0
    body: Body | None = None
    wire: object = field(default=None, repr=False, compare=False)
    scope: SubagentScope | None = None
    """Set when a subagent child sent this event (through its parent's stream)."""
    """The message as received, for ``run --json`` (:func:`clients.cli.convert.event_json`)."""
