"""A subagent child's events in the parent's stream render as nested lines; its approvals are labelled."""

from __future__ import annotations

import io

from ai_coding.v1 import common_pb2, loop_pb2
from rich.console import Console

from clients.cli import convert, views
from clients.cli.render import EventRenderer

SCOPE = loop_pb2.SubagentScope(run_id="sa-1234", name="writer", call_id="c1", task="create greeting.txt")


def make() -> tuple[EventRenderer, io.StringIO]:
    out = io.StringIO()
    return EventRenderer(Console(file=out, width=200, force_terminal=False, color_system=None)), out


def ev(seq: int, scoped: bool = True, **kwargs: object) -> views.Event:
    message = loop_pb2.TurnEvent(seq=seq, session_id="s1", turn=1, **kwargs)  # type: ignore[arg-type]
    if scoped:
        message.scope.CopyFrom(SCOPE)
    return convert.event(message)


def test_a_childs_start_tools_and_end_are_indented_lines_naming_the_child() -> None:
    renderer, out = make()
    renderer.handle(ev(1, subagent_started=loop_pb2.SubagentStarted(run_id="sa-1234", name="writer",
                                                                  task="create greeting.txt")))
    result = common_pb2.ToolResult(call_id="k1", tool="write", ok=True, output="wrote 6 bytes")
    renderer.handle(ev(2, tool_finished=loop_pb2.ToolFinished(result=result)))
    renderer.handle(ev(3, subagent_finished=loop_pb2.SubagentFinished(
        run_id="sa-1234", name="writer", status="completed", usage=common_pb2.Usage(total_tokens=1500),
        elapsed_ms=2100)))
    lines = out.getvalue().splitlines()
    assert lines[0] == "  ↳ subagent writer [sa-1234] · create greeting.txt"
    assert lines[1].startswith("    writer ✓ ") and "write" in lines[1]
    assert lines[2].startswith("  ↳ subagent writer completed · 1.5k tokens")
    assert renderer.last_tool is None  # /last stays on the parent's own calls


def test_a_childs_approval_is_the_ordinary_prompt_labelled_with_the_child_and_its_task() -> None:
    renderer, out = make()
    renderer.handle(ev(1, approval_requested=loop_pb2.ApprovalRequested(
        request_id="sa-1234-a1", call_id="k1", tool="write", arguments_json='{"path": "a"}', reason="writes a file")))
    assert renderer.pending_approval is not None and renderer.pending_approval.request_id == "sa-1234-a1"
    assert "? approve write for subagent writer (task: create greeting.txt) (writes a file)" in out.getvalue()
    renderer.handle(ev(2, approval_resolved=loop_pb2.ApprovalResolved(
        request_id="sa-1234-a1", decision=loop_pb2.APPROVAL_DECISION_DENY)))
    assert renderer.pending_approval is None


def test_a_background_completion_is_one_dim_line_with_the_transcript_pointer() -> None:
    renderer, out = make()
    renderer.handle(ev(1, scoped=False, background_task_done=loop_pb2.SubagentTaskDone(
        run_id="sa-9", name="alpha", status="completed", summary="alpha done", elapsed_ms=1200,
        transcript_path=".ai-coding/transcripts/subagents/sa-9.json")))
    assert out.getvalue().splitlines() == [
        "  ⟲ background subagent alpha [sa-9] completed · alpha done · 1.2s · full packet: "
        ".ai-coding/transcripts/subagents/sa-9.json"]


def test_a_child_whose_json_misses_a_required_key_gets_a_warning_line_naming_it() -> None:
    renderer, out = make()
    renderer.handle(ev(1, subagent_finished=loop_pb2.SubagentFinished(
        run_id="sa-1234", name="writer", status="completed",
        packet_json='{"schema_valid": false, "schema_errors": ["missing required key \'files\'"]}')))
    renderer.handle(ev(2, subagent_finished=loop_pb2.SubagentFinished(
        run_id="sa-5", name="other", status="completed", packet_json='{"schema_valid": true}')))
    warnings = [line for line in out.getvalue().splitlines() if "⚠" in line]
    assert warnings == ["  ⚠ subagent writer: its JSON does not match the output_schema: missing required key 'files'"]
