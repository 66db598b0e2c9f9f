"""Protobuf <-> domain for the loop service: the only module that touches loop_pb2."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict
from enum import StrEnum
from typing import Any

from ai_coding.v1 import common_pb2, loop_pb2

from services.loop import inbound
from services.loop.core.approvals import Decision
from services.loop.core.attachments import InputFile
from services.loop.core.domain import InterruptScope, ModelCall
from services.loop.core.events import Event
from services.loop.core.ports import ToolOutcome, Usage
from services.loop.core.sessions import Session, SessionSummary, UnreadableSession, message_to_disk
from services.loop.core.turn_events import EventBody, LayerStat, TaskItem
from services.loop.plans.receipts import PLAN
from services.loop.policy.turn import Status

_STATUS: dict[Status, int] = {
    Status.COMPLETED: loop_pb2.TURN_STATUS_COMPLETED,
    Status.MAX_ITERATIONS: loop_pb2.TURN_STATUS_MAX_ITERATIONS,
    Status.BUDGET: loop_pb2.TURN_STATUS_BUDGET,
    Status.TIMEOUT: loop_pb2.TURN_STATUS_TIMEOUT,
    Status.INTERRUPTED: loop_pb2.TURN_STATUS_INTERRUPTED,
    Status.APPROVAL_STOP: loop_pb2.TURN_STATUS_APPROVAL_STOP,
    Status.FAILED: loop_pb2.TURN_STATUS_FAILED,
    Status.ACCEPTANCE_FAILED: loop_pb2.TURN_STATUS_ACCEPTANCE_FAILED,
    Status.PLAN_INCOMPLETE: loop_pb2.TURN_STATUS_PLAN_INCOMPLETE,
}
_DECISION_TO_PB = {
    Decision.ALLOW_ONCE: loop_pb2.APPROVAL_DECISION_ALLOW_ONCE,
    Decision.ALLOW_ALWAYS: loop_pb2.APPROVAL_DECISION_ALLOW_ALWAYS,
    Decision.DENY: loop_pb2.APPROVAL_DECISION_DENY,
    Decision.STOP: loop_pb2.APPROVAL_DECISION_STOP,
}
_DECISION_FROM_PB = {v: k for k, v in _DECISION_TO_PB.items()}
_TURN_EVENT_FIELDS = loop_pb2.TurnEvent.DESCRIPTOR.fields_by_name
# Payload type -> its proto message class (by the oneof field that ``kind`` names).
_MESSAGE_OF: dict[type[EventBody], Any] = {}
# Values the proto takes as they are (most fields of most events: a text delta is one str).
_PLAIN = frozenset({str, int, float, bool, bytes})

def usage_to_proto(usage: Usage) -> common_pb2.Usage:
    return common_pb2.Usage(**{k: v for k, v in asdict(usage).items() if v is not None})


def outcome_to_proto(outcome: ToolOutcome) -> common_pb2.ToolResult:
    result = common_pb2.ToolResult(
        call_id=outcome.call_id, tool=outcome.tool, ok=outcome.ok, output=outcome.output,
        data_json=json.dumps(outcome.data or {}), duration_ms=outcome.duration_ms, limit_hit=outcome.limit_hit,
    )
    if not outcome.ok:
        result.error.code = outcome.error_code
        result.error.message = outcome.error_message
    return result


def _value(value: Any) -> Any:
    """One payload field as the proto wants it (by the value's type)."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, Status):
        return _STATUS[value]
    if isinstance(value, Decision):
        return _DECISION_TO_PB[value]
    if isinstance(value, StrEnum):
        return str(value)
    if isinstance(value, Usage):
        return usage_to_proto(value)
    if isinstance(value, ModelCall):
        return loop_pb2.ModelCall(**asdict(value))
    if isinstance(value, ToolOutcome):
        return outcome_to_proto(value)
    if isinstance(value, TaskItem):
        return loop_pb2.TaskItem(id=value.id, content=value.content, status=value.status,
                                 depends_on=value.depends_on)
    if isinstance(value, LayerStat):
        return loop_pb2.LayerStat(**asdict(value))
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


def body_to_proto(body: EventBody) -> Any:
    """A payload as its proto message: the class by the payload's type, fields by name."""
    cls = type(body)
    message: Any = _MESSAGE_OF.get(cls)
    if message is None:
        message = _MESSAGE_OF[cls] = getattr(_TURN_EVENT_FIELDS[cls.kind].message_type, "_concrete_class", None)
    # A payload is a frozen dataclass without slots or extra attributes: its __dict__ is its fields.
    return message(**{k: v if type(v) in _PLAIN else _value(v) for k, v in vars(body).items()})


def event_to_proto(event: Event) -> loop_pb2.TurnEvent:
    """A numbered event as a TurnEvent."""
    body = event.body
    message = loop_pb2.TurnEvent(seq=event.seq, session_id=event.session_id, turn=event.turn, ts=event.ts,
                                 **{body.kind: body_to_proto(body)})
    if event.scope is not None:
        message.scope.CopyFrom(loop_pb2.SubagentScope(**asdict(event.scope)))
    return message


def inbound_from_proto(message: loop_pb2.ClientMessage) -> inbound.Inbound:
    """A ClientMessage as a domain message (``Unknown`` when it has no body)."""
    which = message.WhichOneof("msg")
    if which == "start":
        return inbound.Start(message.start.session_id, message.start.input, _files(message.start.attachments),
                             message.start.editor_buffers)
    if which == "plan":
        return inbound.StartPlan(message.plan.session_id, message.plan.topic)
    if which == "attach":
        return inbound.Attach(message.attach.session_id, message.attach.after_seq)
    if which == "approval":
        return inbound.ApprovalAnswer(message.approval.request_id, _DECISION_FROM_PB.get(message.approval.decision))
    if which == "answer":
        return inbound.QuestionReply(message.answer.request_id, message.answer.answer)
    if which == "buffer":
        return inbound.BufferAnswer(message.buffer.request_id, message.buffer.text if message.buffer.found else None)
    if which == "interrupt":
        scope = InterruptScope.BATCH if message.interrupt.scope == loop_pb2.INTERRUPT_SCOPE_BATCH else (
            InterruptScope.TURN)  # unspecified: the turn
        return inbound.InterruptRequest(scope)
    if which == "queue":
        return inbound.Queue(message.queue.input, _files(message.queue.attachments))
    return inbound.Unknown()


def _files(items: Iterable[loop_pb2.InputAttachment]) -> tuple[InputFile, ...]:
    return tuple(InputFile(a.path, a.mime_type, a.data, a.truncated) for a in items)


def summary_to_proto(summary: SessionSummary, is_open: bool) -> loop_pb2.SessionSummary:
    return loop_pb2.SessionSummary(session_id=summary.id, created=summary.created,
                                   last_activity=summary.updated, preview=summary.preview,
                                   message_count=summary.message_count, open=is_open)


def unreadable_to_proto(entry: UnreadableSession) -> loop_pb2.UnreadableSession:
    return loop_pb2.UnreadableSession(session_id=entry.id, path=entry.path, reason=entry.reason, hint=entry.hint)


def plan_json(session: Session) -> str:
    """The last /plan run's receipts for GetSession ("" when none): only those of items still on the
    list (rewriting the list drops the others)."""
    plan = PLAN.read(session)
    if not (plan.goal or plan.receipts):
        return ""
    ids = {item.id for item in session.task_state.items}
    receipts = [asdict(r) for r in plan.receipts if r.item_id in ids]
    return json.dumps({"goal": plan.goal, "receipts": receipts}, ensure_ascii=False)


def messages_json(session: Session) -> str:
    return json.dumps([message_to_disk(m) for m in session.messages], ensure_ascii=False)


def messages_page(session: Session, start: int, page_bytes: int) -> tuple[str, int]:
    """``(JSON list of messages[start:k], k or 0 at the end)``: messages from ``start`` until about
    ``page_bytes`` of JSON (always at least one message, so a page makes progress)."""
    messages = session.messages
    parts: list[str] = []
    size, i = 2, max(start, 0)
    while i < len(messages) and (not parts or size < page_bytes):
        part = json.dumps(message_to_disk(messages[i]), ensure_ascii=False)
        if parts and size + len(part) > page_bytes:
            break
        parts.append(part)
        size += len(part) + 1
        i += 1
    return "[" + ",".join(parts) + "]", i if i < len(messages) else 0
