"""Typed turn events: each payload class agrees with its proto message, and convert maps it by type."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import fields
from pathlib import Path
from typing import Any, get_type_hints

import pytest
from ai_coding.v1 import loop_pb2

from services.loop.convert import event_to_proto
from services.loop.core import turn_events
from services.loop.core.approvals import Decision
from services.loop.core.domain import ModelCall
from services.loop.core.events import EventLog
from services.loop.core.ports import ToolOutcome, Usage
from services.loop.core.turn_events import EventBody, body_classes
from services.loop.policy.turn import Status

ROOT = Path(__file__).resolve().parents[3]
ONEOF = loop_pb2.TurnEvent.DESCRIPTOR.oneofs_by_name["event"]


def test_every_oneof_field_has_exactly_one_payload_class() -> None:
    kinds = [cls.kind for cls in body_classes()]
    assert sorted(kinds) == sorted(f.name for f in ONEOF.fields)
    assert len(set(kinds)) == len(kinds)


@pytest.mark.parametrize("cls", body_classes(), ids=lambda c: c.__name__)
def test_payload_fields_are_the_proto_message_fields(cls: type[EventBody]) -> None:
    message = loop_pb2.TurnEvent.DESCRIPTOR.fields_by_name[cls.kind].message_type
    assert message is not None
    assert [f.name for f in fields(cls)] == [f.name for f in message.fields]


_SAMPLES: dict[type, Any] = {str: "x", bool: True, int: 3, float: 1.5, Usage: Usage(1, 2, 3, cached_tokens=1),
                             ToolOutcome: ToolOutcome("c1", "read", False, "boom", {"a": 1}, "not_found", "no"),
                             ModelCall: ModelCall("deepseek", "deepseek-v4", "api.deepseek.com", 443, True,
                                                  error_type="rate_limited", attempts=2),
                             Status: Status.BUDGET, Decision: Decision.ALLOW_ALWAYS,
                             list[str]: ["a", "b"],
                             list[turn_events.TaskItem]: [turn_events.TaskItem("1", "do", "pending", ["0"])],
                             list[turn_events.LayerStat]: [turn_events.LayerStat("L1", removed=2)]}


@pytest.mark.parametrize("cls", body_classes(), ids=lambda c: c.__name__)
def test_every_payload_converts_with_its_values(cls: type[EventBody]) -> None:
    hints = get_type_hints(cls, vars(turn_events))
    body = cls(**{f.name: _SAMPLES[hints[f.name]] for f in fields(cls)})
    log = EventLog("s1")
    pb = event_to_proto(log.emit(2, body))
    assert pb.WhichOneof("event") == cls.kind and pb.seq == 1 and pb.turn == 2
    message = getattr(pb, cls.kind)
    for name, value in body.fields().items():
        got = getattr(message, name)
        if isinstance(value, str | int | float) and not isinstance(value, Status | Decision):
            assert got == value, name
        elif isinstance(value, list):
            assert len(got) == len(value), name
        elif isinstance(value, ModelCall):
            assert (got.provider, got.server_port, got.error_type) == ("deepseek", 443, "rate_limited"), name


def test_a_subagent_scope_travels_in_the_envelope_and_is_absent_on_the_sessions_own_events() -> None:
    log = EventLog("s1")
    scope = turn_events.SubagentScope(run_id="r1", name="lister", call_id="c7", task="list files")
    child = event_to_proto(log.emit(1, turn_events.TextDelta(text="hi"), scope))
    own = event_to_proto(log.emit(1, turn_events.TextDelta(text="ho")))
    assert child.HasField("scope") and (child.scope.run_id, child.scope.name, child.scope.call_id) == ("r1", "lister", "c7")
    assert not own.HasField("scope")


def test_status_decision_and_nested_values_map_to_their_proto_forms() -> None:
    log = EventLog("s1")
    finished = event_to_proto(log.emit(1, turn_events.TurnFinished(
        status=Status.APPROVAL_STOP, text="", handoff="h", usage=Usage(5, 6, 11), iterations=2,
        duration_ms=3.0, reason="stop", cleared_requests=["t1-a1"]))).turn_finished
    assert finished.status == loop_pb2.TURN_STATUS_APPROVAL_STOP
    assert finished.usage.total_tokens == 11 and not finished.usage.HasField("cached_tokens")
    resolved = event_to_proto(log.emit(1, turn_events.ApprovalResolved("t1-a1", Decision.STOP, "user")))
    assert resolved.approval_resolved.decision == loop_pb2.APPROVAL_DECISION_STOP
    tool = event_to_proto(log.emit(1, turn_events.ToolFinished(
        ToolOutcome("c1", "edit", False, "", error_code="edit_no_match", error_message="no")))).tool_finished
    assert tool.result.error.code == "edit_no_match" and tool.result.data_json == "{}"
    tasks = event_to_proto(log.emit(1, turn_events.TaskListUpdated(
        "goal", [turn_events.TaskItem("1", "a", "blocked", ["2"])]))).task_list_updated
    assert tasks.items[0].depends_on == ["2"] and tasks.items[0].status == "blocked"


@pytest.mark.slow
def test_a_misspelled_event_field_fails_mypy(tmp_path: Path) -> None:
    """The point of typed events: the mistake is caught before anything runs."""
    probe = tmp_path / "probe_event.py"
    probe.write_text(textwrap.dedent("""\
        from services.loop.core.turn_events import Notice
        Notice(level="info", txt="typo")
    """))
    # Incremental, in a cache of its own under the ignored .mypy_cache: ~0.4 s once warm instead of
    # ~4 s re-checking turn_events' whole import tree every run (mypy re-checks what changed).
    cache = ROOT / ".mypy_cache" / "probe-turn-events"
    run = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "--cache-dir", str(cache),
                          str(probe)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert 'Unexpected keyword argument "txt" for "Notice"' in run.stdout


def test_the_event_union_names_every_payload_class_once() -> None:
    import typing

    from services.loop.core.turn_events import EventBody as Union

    members = typing.get_args(Union)
    assert len(members) == len(set(members))
    assert set(members) == set(body_classes())
