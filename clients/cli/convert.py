"""Wire messages -> view models (and the few messages the client sends), in one place.

Only the connection modules and this one import ``*_pb2``; everything else in the client
sees :mod:`clients.cli.views`. A view dataclass names the proto fields it keeps (a subset:
what a newer loop adds is dropped until a view wants it), so the copy is by field name,
checked against the descriptors by tests/unit/cli/test_cli_convert.py.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ai_coding.v1 import common_pb2, loop_pb2
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from clients.cli import service_views, session_views, views
from clients.cli.attachments import Attachment
from clients.cli.records import fields_of

if TYPE_CHECKING:
    from ai_coding.v1 import memory_pb2

T = TypeVar("T")

# TurnEvent oneof field -> its view dataclass.
EVENT_BODIES: dict[str, type[views.Body]] = {
    "turn_started": views.TurnStarted,
    "text_delta": views.TextDelta,
    "reasoning_delta": views.ReasoningDelta,
    "tool_started": views.ToolStarted,
    "tool_chunk": views.ToolChunk,
    "tool_finished": views.ToolFinished,
    "approval_requested": views.ApprovalRequested,
    "approval_resolved": views.ApprovalResolved,
    "question_asked": views.QuestionAsked,
    "question_resolved": views.QuestionResolved,
    "buffer_requested": views.BufferRequested,
    "task_list_updated": views.TaskListUpdated,
    "compaction_started": views.CompactionStarted,
    "compaction_ended": views.CompactionEnded,
    "memory_recalled": views.MemoryRecalled,
    "degraded": views.Degraded,
    "search_stalled": views.SearchStalled,
    "context_assembled": views.ContextAssembled,
    "model_step_finished": views.ModelStepFinished,
    "input_queued": views.InputQueued,
    "notice": views.Notice,
    "turn_finished": views.TurnFinished,
    "events_skipped": views.EventsSkipped,
    "hook_run": views.HookRun,
    "skill_catalog_changed": views.SkillCatalogChanged,
    "subagent_started": views.SubagentStarted,
    "subagent_finished": views.SubagentFinished,
    "background_task_done": views.BackgroundTaskDone,
    "acceptance_checked": views.AcceptanceChecked,
    "plan_step_started": views.PlanStepStarted,
    "plan_step_receipt": views.PlanStepReceipt,
    "plan_report": views.PlanReport,
    "ledger_updated": views.LedgerUpdated,
}
# Messages nested in events (full proto name -> view).
PARTS: dict[str, type[Any]] = {
    "ai_coding.v1.Usage": views.Usage,
    "ai_coding.v1.ToolResult": views.ToolResult,
    "ai_coding.v1.ErrorInfo": views.ToolError,
    "ai_coding.v1.TaskItem": views.TaskItem,
    "ai_coding.v1.LayerStat": views.LayerStat,
    "ai_coding.v1.Note": service_views.Note,
    "ai_coding.v1.RecallHit": service_views.RecallHit,
    "ai_coding.v1.ServerStatus": service_views.ServerStatus,
    "ai_coding.v1.ServerLogLine": service_views.ServerLogLine,
}
# Enums with a view enum; any other (``ServerState``) stays its number.
ENUMS: dict[str, type[enum.Enum]] = {
    "ai_coding.v1.ApprovalDecision": views.Decision,
    "ai_coding.v1.TurnStatus": views.TurnStatus,
}


def copy(message: Message, view: type[T]) -> T:
    """The view dataclass ``view`` filled from the same-named fields of ``message``."""
    fields = message.DESCRIPTOR.fields_by_name
    values = {f.name: _value(message, fields[f.name]) for f in fields_of(view)}
    return view(**values)


def _value(message: Message, field: Any) -> Any:
    value = getattr(message, field.name)
    if field.is_repeated:
        return tuple(_part(item, field) for item in value)
    if field.message_type is None and field.has_presence and not message.HasField(field.name):
        return None  # an `optional` scalar the sender left out: "not reported", not zero
    return _part(value, field)


def _part(value: Any, field: Any) -> Any:
    if field.message_type is not None:
        return copy(value, PARTS[field.message_type.full_name])
    if field.enum_type is not None and field.enum_type.full_name in ENUMS:
        kind = ENUMS[field.enum_type.full_name]
        number = field.enum_type.values_by_number.get(value)
        try:
            return kind(number.name if number is not None else "")
        except ValueError:
            return kind[next(iter(kind.__members__))]  # a value newer than this client: unspecified
    return value


def event(message: loop_pb2.TurnEvent) -> views.Event:
    """One ``TurnEvent`` as a view (``body`` is ``None`` for a kind this client does not know)."""
    kind = message.WhichOneof("event")
    body_view = EVENT_BODIES.get(kind) if kind else None
    body = copy(getattr(message, kind), body_view) if kind and body_view else None
    scope = copy(message.scope, views.SubagentScope) if message.HasField("scope") else None
    return views.Event(seq=message.seq, session_id=message.session_id, turn=message.turn, ts=message.ts,
                       body=body, wire=message, scope=scope)


def event_json(ev: views.Event) -> dict[str, Any]:
    """The event as ``run --json`` prints it: the proto's JSON mapping, 64-bit integers as numbers
    (docs/events.md; the schema is clients/cli/run_events.schema.json)."""
    if not isinstance(ev.wire, Message):
        raise TypeError("event_json needs an event converted from the wire")
    return message_json(ev.wire)


_INT64 = frozenset({FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT64,
                    FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED64})


def message_json(message: Message) -> dict[str, Any]:
    """A protobuf message in the JSON mapping, 64-bit integers as numbers (``event_json`` uses it)."""
    from google.protobuf.json_format import MessageToDict  # `run --json` and the agent server only

    data = MessageToDict(message)
    _numbers(message.DESCRIPTOR, data)
    return data


def _numbers(descriptor: Any, data: dict[str, Any]) -> None:
    """Turn the 64-bit integer strings of ``data`` (a message of ``descriptor``) into ints."""
    for field in descriptor.fields:
        if field.json_name not in data:
            continue
        value = data[field.json_name]
        repeated = field.is_repeated
        if field.message_type is not None:
            for item in value if repeated else [value]:
                _numbers(field.message_type, item)
        elif field.type in _INT64:
            data[field.json_name] = [int(v) for v in value] if repeated else int(value)


def tool_result(message: common_pb2.ToolResult) -> views.ToolResult:
    return copy(message, views.ToolResult)


def opened(message: loop_pb2.OpenSessionLoopResponse) -> session_views.OpenedSession:
    return copy(message, session_views.OpenedSession)


def session_summary(message: loop_pb2.SessionSummary) -> session_views.SessionSummary:
    return copy(message, session_views.SessionSummary)


def session_list(message: loop_pb2.ListSessionsResponse) -> session_views.SessionList:
    return session_views.SessionList(sessions=tuple(session_summary(s) for s in message.sessions),
                             unreadable=tuple(copy(u, session_views.UnreadableSession) for u in message.unreadable))


def session_detail(pages: Sequence[loop_pb2.GetSessionResponse]) -> session_views.SessionDetail:
    """A session from its GetSession pages (each a JSON list of the next messages), in order."""
    items = [page.messages_json.strip()[1:-1].strip() for page in pages]
    messages_json = "[" + ",".join(item for item in items if item) + "]"
    return session_views.SessionDetail(summary=session_summary(pages[-1].summary), messages_json=messages_json,
                               plan_json=pages[-1].plan_json)


def command_reply(message: loop_pb2.RunCommandResponse) -> session_views.CommandReply:
    return copy(message, session_views.CommandReply)


# ---- what the client sends ----


def start(session_id: str, text: str, files: Sequence[Attachment] = (), editor_buffers: bool = False
          ) -> loop_pb2.ClientMessage:
    attachments = [loop_pb2.InputAttachment(path=a.path, mime_type=a.mime_type, data=a.data, truncated=a.truncated)
                   for a in files]
    return loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=session_id, input=text,
                                                           attachments=attachments, editor_buffers=editor_buffers))


def buffer_reply(request_id: str, text: str | None) -> loop_pb2.ClientMessage:
    return loop_pb2.ClientMessage(buffer=loop_pb2.BufferReply(request_id=request_id, found=text is not None,
                                                              text=text or ""))


def start_plan(session_id: str, topic: str) -> loop_pb2.ClientMessage:
    return loop_pb2.ClientMessage(plan=loop_pb2.StartPlan(session_id=session_id, topic=topic))


def attach(session_id: str, after_seq: int) -> loop_pb2.ClientMessage:
    return loop_pb2.ClientMessage(attach=loop_pb2.AttachTurn(session_id=session_id, after_seq=after_seq))


def approval(request_id: str, decision: views.Decision) -> loop_pb2.ClientMessage:
    value = loop_pb2.ApprovalDecision.Value(decision.value)
    return loop_pb2.ClientMessage(approval=loop_pb2.ApprovalReply(request_id=request_id, decision=value))


def answer(request_id: str, text: str) -> loop_pb2.ClientMessage:
    return loop_pb2.ClientMessage(answer=loop_pb2.QuestionAnswer(request_id=request_id, answer=text))


def interrupt(scope: views.Scope) -> loop_pb2.ClientMessage:
    value = loop_pb2.InterruptScope.Value(scope.value)
    return loop_pb2.ClientMessage(interrupt=loop_pb2.Interrupt(scope=value))


def queue(text: str) -> loop_pb2.ClientMessage:
    return loop_pb2.ClientMessage(queue=loop_pb2.QueueInput(input=text))


def recall_request(workspace: str, query: str, k: int = 5, kind: str = "", scene: str = "") -> memory_pb2.RecallRequest:
    """A Recall for a person's search: ``skip_hit_count`` so it does not count as the model's use."""
    from ai_coding.v1 import memory_pb2  # the memory service's messages: only the commands that call it

    return memory_pb2.RecallRequest(workspace=workspace, query=query, k=k, kind=kind, scene=scene,
                                    skip_hit_count=True)
