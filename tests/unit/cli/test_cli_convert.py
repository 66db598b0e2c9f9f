"""The client's converter: every turn event kind has a view, views name only real proto fields,
and what the wire leaves unsaid stays unsaid (None, unspecified), never a guess."""

from __future__ import annotations

import pytest
from ai_coding.v1 import common_pb2, loop_pb2, mcp_gateway_pb2, memory_pb2
from google.protobuf.message import Message

from clients.cli import convert, service_views, session_views, views
from clients.cli.records import fields_of

_MESSAGES: dict[str, type[Message]] = {
    "ai_coding.v1.Usage": common_pb2.Usage,
    "ai_coding.v1.ToolResult": common_pb2.ToolResult,
    "ai_coding.v1.ErrorInfo": common_pb2.ErrorInfo,
    "ai_coding.v1.TaskItem": loop_pb2.TaskItem,
    "ai_coding.v1.LayerStat": loop_pb2.LayerStat,
    "ai_coding.v1.Note": memory_pb2.Note,
    "ai_coding.v1.RecallHit": memory_pb2.RecallHit,
    "ai_coding.v1.ServerStatus": mcp_gateway_pb2.ServerStatus,
}


def test_every_turn_event_kind_on_the_wire_has_a_view_named_after_it() -> None:
    oneof = loop_pb2.TurnEvent.DESCRIPTOR.oneofs_by_name["event"]
    missing = sorted(f.name for f in oneof.fields if f.name not in convert.EVENT_BODIES)
    assert not missing, f"add a view dataclass in clients/cli/views.py and map it in convert.EVENT_BODIES: {missing}"
    for kind, view in convert.EVENT_BODIES.items():
        camel = "".join(part.capitalize() for part in kind.split("_"))
        assert view.__name__ == camel, f"{kind} -> {view.__name__}: the renderer dispatches on the class name"


_WIRE_NAMES = {"ToolError": "ErrorInfo", "OpenedSession": "OpenSessionLoopResponse",
               "CommandReply": "RunCommandResponse", "Recall": "RecallResponse", "BackgroundTaskDone": "SubagentTaskDone"}


@pytest.mark.parametrize("view", [*convert.EVENT_BODIES.values(), *convert.PARTS.values(), session_views.OpenedSession,
                                  session_views.SessionSummary, session_views.CommandReply, service_views.Recall, service_views.CatalogEntry,
                                  views.SubagentScope])
def test_a_view_names_only_fields_its_message_has_and_copies_from_an_empty_one(view: type[object]) -> None:
    name = _WIRE_NAMES.get(view.__name__, view.__name__)
    modules = [m for m in (loop_pb2, common_pb2, memory_pb2, mcp_gateway_pb2) if name in m.DESCRIPTOR.message_types_by_name]
    assert modules, f"no wire message {name} for the view {view.__name__}"
    message = getattr(modules[0], name)
    fields = {f.name for f in fields_of(view)}
    assert fields <= set(message.DESCRIPTOR.fields_by_name), fields - set(message.DESCRIPTOR.fields_by_name)
    assert convert.copy(message(), view) == view()


def test_the_nested_messages_the_converter_knows_are_the_ones_views_nest() -> None:
    for full_name, message in _MESSAGES.items():
        assert message.DESCRIPTOR.full_name == full_name and full_name in convert.PARTS


def test_an_event_converts_field_by_field_with_nested_results_and_enums() -> None:
    wire = loop_pb2.TurnEvent(seq=7, session_id="s", turn=2, tool_finished=loop_pb2.ToolFinished(
        result=common_pb2.ToolResult(call_id="c1", tool="bash", ok=False, output="x",
                                     error=common_pb2.ErrorInfo(code="tool_timeout", message="slow"))))
    event = convert.event(wire)
    assert (event.seq, event.session_id, event.turn) == (7, "s", 2)
    assert event.body == views.ToolFinished(result=views.ToolResult(
        call_id="c1", tool="bash", ok=False, output="x", error=views.ToolError(code="tool_timeout", message="slow")))
    assert convert.event_json(event)["toolFinished"]["result"]["callId"] == "c1"


def test_usage_the_provider_did_not_report_stays_unknown_not_zero() -> None:
    finished = convert.event(loop_pb2.TurnEvent(turn_finished=loop_pb2.TurnFinished(
        status=loop_pb2.TURN_STATUS_BUDGET, usage=common_pb2.Usage(prompt_tokens=10, cached_tokens=0)))).body
    assert isinstance(finished, views.TurnFinished)
    assert finished.status is views.TurnStatus.BUDGET
    assert finished.usage.cached_tokens == 0 and finished.usage.prefix_ratio is None


def test_a_status_number_newer_than_the_client_reads_as_unspecified() -> None:
    wire = loop_pb2.TurnEvent(approval_resolved=loop_pb2.ApprovalResolved(request_id="r", decision=99))  # type: ignore[arg-type]
    body = convert.event(wire).body
    assert isinstance(body, views.ApprovalResolved) and body.decision is views.Decision.UNSPECIFIED


def test_a_scoped_event_keeps_its_subagent_scope_and_an_unscoped_one_has_none() -> None:
    scoped = loop_pb2.TurnEvent(seq=4, scope=loop_pb2.SubagentScope(run_id="r1", name="lister", call_id="c1"),
                                text_delta=loop_pb2.TextDelta(text="x"))
    event = convert.event(scoped)
    assert event.scope == views.SubagentScope(run_id="r1", name="lister", call_id="c1", task="")
    assert convert.event(loop_pb2.TurnEvent(seq=5, text_delta=loop_pb2.TextDelta(text="y"))).scope is None


def test_an_event_without_a_kind_has_no_body_and_is_still_numbered() -> None:
    event = convert.event(loop_pb2.TurnEvent(seq=3))
    assert event.body is None and event.seq == 3


@pytest.mark.parametrize("kind", [views.Decision, views.TurnStatus, views.Scope])
def test_every_view_enum_member_is_a_wire_enum_name(kind: type[views.Decision | views.TurnStatus | views.Scope]) -> None:
    wire = {views.Decision: loop_pb2.ApprovalDecision, views.TurnStatus: loop_pb2.TurnStatus,
            views.Scope: loop_pb2.InterruptScope}[kind]
    assert {member.value for member in kind} <= set(wire.keys())
    if kind is not views.Scope:  # the client never sends an unspecified scope
        assert {member.value for member in kind} == set(wire.keys())


def test_what_the_client_sends_carries_the_wire_values() -> None:
    assert convert.interrupt(views.Scope.BATCH).interrupt.scope == loop_pb2.INTERRUPT_SCOPE_BATCH
    assert convert.approval("r1", views.Decision.STOP).approval.decision == loop_pb2.APPROVAL_DECISION_STOP
    assert convert.queue("next").queue.input == "next"
    assert convert.attach("s", 12).attach.after_seq == 12
