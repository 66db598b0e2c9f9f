"""The event renderer against hand-built TurnEvent protos: plain text capture at 60 and 200 columns."""

from __future__ import annotations

import io
import re

import pytest
from ai_coding.v1 import common_pb2, loop_pb2
from rich.console import Console

from clients.cli import convert, views
from clients.cli.render import EventRenderer, last_tool_text, status_line
from clients.cli.textsafe import visible_controls


def make(width: int = 200, terminal: bool = False) -> tuple[EventRenderer, io.StringIO]:
    out = io.StringIO()
    # width and height both: rich sizes a TERM=dumb console 80x25 unless given the whole size.
    console = Console(file=out, width=width, height=25, force_terminal=terminal,
                      color_system="standard" if terminal else None, legacy_windows=False)
    return EventRenderer(console), out


_seq = iter(range(1, 1_000_000))


def ev(**kwargs: object) -> views.Event:
    """A wire event as the renderer gets it: through the client's converter."""
    return convert.event(loop_pb2.TurnEvent(seq=next(_seq), session_id="s1", turn=1, **kwargs))  # type: ignore[arg-type]


def finished(status: int = loop_pb2.TURN_STATUS_COMPLETED, **usage: int) -> views.Event:
    return ev(turn_finished=loop_pb2.TurnFinished(
        status=status, usage=common_pb2.Usage(**usage), iterations=2, duration_ms=2300))  # type: ignore[arg-type]


def tool(call_id: str, ok: bool = True, output: str = "", code: str = "", ms: float = 1200) -> views.Event:
    result = common_pb2.ToolResult(call_id=call_id, tool="bash", ok=ok, output=output, duration_ms=ms,
                                   error=common_pb2.ErrorInfo(code=code, message="stopped by the user" if code else ""))
    return ev(tool_finished=loop_pb2.ToolFinished(result=result))


def test_text_deltas_stream_into_one_line_and_the_turn_ends_with_a_status_line() -> None:
    renderer, out = make()
    for piece in ("Hel", "lo ", "world"):
        renderer.handle(ev(text_delta=loop_pb2.TextDelta(text=piece)))
    assert out.getvalue() == "Hello world"
    renderer.handle(finished(prompt_tokens=1234, completion_tokens=56, cached_tokens=1000))
    lines = out.getvalue().splitlines()
    assert lines[0] == "Hello world"
    assert lines[1] == "● completed · 1.2k in / 56 out · cache 81% · 2 steps · 2.3s"


def test_a_tool_call_is_one_started_line_then_one_result_line_with_duration() -> None:
    renderer, out = make()
    renderer.handle(ev(tool_started=loop_pb2.ToolStarted(call_id="c1", tool="bash", title="Running · pytest -q")))
    renderer.handle(tool("c1", output="3 passed in 0.1s\n"))
    assert out.getvalue().splitlines() == ["▸ Running · pytest -q", "✓ Running · pytest -q · 3 passed in 0.1s · 1.2s"]
    assert renderer.last_tool is not None
    assert "3 passed" in last_tool_text(renderer.last_tool)


def test_on_a_terminal_the_started_line_is_replaced_in_place() -> None:
    renderer, out = make(terminal=True)
    renderer.handle(ev(tool_started=loop_pb2.ToolStarted(call_id="c1", tool="bash", title="Running · ls")))
    renderer.handle(tool("c1", output="a.py"))
    assert "\x1b[1A\x1b[2K" in out.getvalue()


def test_a_failed_tool_shows_its_error_code() -> None:
    renderer, out = make()
    renderer.handle(ev(tool_started=loop_pb2.ToolStarted(call_id="c1", tool="bash", title="Running · sleep 60")))
    renderer.handle(tool("c1", ok=False, code="cancelled_by_user"))
    assert out.getvalue().splitlines()[-1].startswith("✗ Running · sleep 60 · cancelled_by_user: stopped by the user")


def test_a_command_that_exits_non_zero_is_marked_failed_with_its_exit_code_and_last_line() -> None:
    renderer, out = make()
    renderer.handle(ev(tool_started=loop_pb2.ToolStarted(call_id="c1", tool="bash", title="Running · pytest")))
    output = "Traceback (most recent call last):\n  File \"t.py\", line 2\nAssertionError: 5 != -1\n\n(exit code 1)"
    result = common_pb2.ToolResult(call_id="c1", tool="bash", ok=True, output=output, duration_ms=65,
                                   data_json='{"exit_code": 1, "total_chars": 80}')
    renderer.handle(ev(tool_finished=loop_pb2.ToolFinished(result=result)))
    assert out.getvalue().splitlines()[-1] == "✗ Running · pytest · exit 1 · AssertionError: 5 != -1 · 65ms"
    # Exit code 0 (or a tool with no exit code) keeps the ✓ and the first output line.
    passed = common_pb2.ToolResult(call_id="c2", tool="bash", ok=True, output="3 passed", duration_ms=65,
                                   data_json='{"exit_code": 0}')
    renderer.handle(ev(tool_finished=loop_pb2.ToolFinished(result=passed)))
    assert out.getvalue().splitlines()[-1] == "✓ Running · 3 passed · 65ms"


def test_running_output_is_bounded_in_height_and_the_rest_is_counted() -> None:
    renderer, out = make()
    renderer.handle(ev(tool_started=loop_pb2.ToolStarted(call_id="c1", tool="bash", title="Running · seq 20")))
    text = "".join(f"{i}\n" for i in range(1, 21))
    renderer.handle(ev(tool_chunk=common_pb2.ToolChunk(call_id="c1", stream="stdout", text=text[:7])))
    renderer.handle(ev(tool_chunk=common_pb2.ToolChunk(call_id="c1", stream="stdout", text=text[7:])))
    renderer.handle(tool("c1", output=text))
    lines = out.getvalue().splitlines()
    shown = [line for line in lines if line.startswith("  │ ") and "more lines" not in line]
    assert [line[4:] for line in shown] == ["1", "2", "3", "4", "5", "6"]
    assert "  │ … 14 more lines (/last shows all)" in lines


def test_reasoning_is_one_folded_line_per_turn() -> None:
    renderer, out = make()
    renderer.handle(ev(turn_started=loop_pb2.TurnStarted(turn=1)))
    renderer.handle(ev(reasoning_delta=loop_pb2.ReasoningDelta(text="x" * 1200)))
    renderer.handle(ev(tool_started=loop_pb2.ToolStarted(call_id="c1", tool="bash", title="Running · ls")))
    renderer.handle(tool("c1", output="a"))
    renderer.handle(ev(reasoning_delta=loop_pb2.ReasoningDelta(text="y" * 50)))
    renderer.handle(ev(text_delta=loop_pb2.TextDelta(text="done")))
    renderer.close()
    text = out.getvalue()
    assert text.count("▸ thinking") == 1
    assert "▸ thinking (1.2k chars)" in text
    assert renderer.last_reasoning == "x" * 1200 + "\n\n" + "y" * 50


MARKUP_CASES = ["[bold]not bold[/bold]", "closing [/x] tag", "[path=/tmp/x]", ":smile: [red]r[/red]"]


@pytest.mark.parametrize("payload", MARKUP_CASES)
def test_markup_in_external_text_renders_literally_everywhere(payload: str) -> None:
    renderer, out = make(terminal=True)
    renderer.handle(ev(text_delta=loop_pb2.TextDelta(text=payload + "\n")))
    renderer.handle(ev(tool_started=loop_pb2.ToolStarted(call_id="c1", tool="bash", title=f"Running · {payload}")))
    renderer.handle(ev(tool_chunk=common_pb2.ToolChunk(call_id="c1", stream="stdout", text=payload + "\n")))
    renderer.handle(tool("c1", output=payload))
    renderer.handle(ev(approval_requested=loop_pb2.ApprovalRequested(request_id="r", tool="bash", preview=payload)))
    renderer.handle(ev(question_asked=loop_pb2.QuestionAsked(request_id="q", question=payload, options=[payload])))
    plain = _strip_sgr(out.getvalue())
    # text, title (started), chunk, result title, result summary, preview, question, option
    assert plain.count(payload) >= 8


def test_escape_sequences_in_external_text_are_shown_not_executed() -> None:
    renderer, out = make(terminal=True)
    hostile = "red:\x1b[31mRED\x1b[0m title:\x1b]0;pwned\x07 clip:\x1b]52;c;ZXZpbA==\x07 csi8:\x9b2J bell\x07"
    renderer.handle(ev(text_delta=loop_pb2.TextDelta(text=hostile + "\n")))
    renderer.handle(ev(tool_started=loop_pb2.ToolStarted(call_id="c1", tool="bash", title=hostile)))
    renderer.handle(tool("c1", output=hostile))
    raw = out.getvalue()
    assert "\x1b[31mRED" not in raw and "\x1b]" not in raw and "\x07" not in raw and "\x9b" not in raw
    assert "\\x1b[31mRED\\x1b[0m" in raw
    assert "\\x1b]52;c;ZXZpbA==\\x07" in raw


def test_visible_controls_keeps_newlines_and_tabs() -> None:
    assert visible_controls("a\tb\r\nc\x00") == "a\tb\nc\\x00"


def _long_lines(renderer: EventRenderer) -> None:
    long = "pytest " + "-k some_really_long_selector " * 12
    renderer.handle(ev(tool_started=loop_pb2.ToolStarted(call_id="c1", tool="bash", title=f"Running · {long}")))
    renderer.handle(tool("c1", output="ok " * 100))
    renderer.handle(ev(turn_finished=loop_pb2.TurnFinished(
        status=loop_pb2.TURN_STATUS_FAILED, reason="the model endpoint refused the request " * 4,
        usage=common_pb2.Usage(prompt_tokens=123456789, completion_tokens=98765), iterations=40,
        duration_ms=400000)))


@pytest.mark.parametrize("width", [60, 200])
def test_status_and_tool_lines_never_wrap_on_a_terminal(width: int) -> None:
    renderer, out = make(width=width, terminal=True)
    _long_lines(renderer)
    shown = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out.getvalue()).replace("\r", "")
    lines = [line for line in shown.split("\n") if line]
    assert len(lines) == 3
    assert all(len(line) <= width for line in lines)
    if width == 60:
        assert all(line.endswith("…") for line in lines)
    else:
        assert lines[2].startswith("● failed (the model endpoint refused")


def test_without_a_terminal_no_line_is_cut_or_wrapped_at_the_console_width() -> None:
    renderer, out = make(width=60)
    _long_lines(renderer)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[1].endswith("· 1.2s") and "…" not in lines[0]
    assert lines[2].startswith("● failed (the model endpoint refused") and lines[2].endswith("6m40s")
    assert "123.5M in / 98.8k out" in lines[2]


def test_cache_is_reported_as_unknown_when_the_provider_did_not_say() -> None:
    line = status_line(convert.copy(loop_pb2.TurnFinished(
        status=loop_pb2.TURN_STATUS_COMPLETED, usage=common_pb2.Usage(prompt_tokens=10, completion_tokens=2)),
        views.TurnFinished))
    assert "cache n/a" in line
    ratio = status_line(convert.copy(loop_pb2.TurnFinished(usage=common_pb2.Usage(prompt_tokens=10, prefix_ratio=0.5)),
                                     views.TurnFinished))
    assert "cache ~50%" in ratio


def test_task_list_prints_only_when_it_changes() -> None:
    renderer, out = make()
    items = [loop_pb2.TaskItem(id="1", content="write tests", status="completed"),
             loop_pb2.TaskItem(id="2", content="fix bug", status="in_progress")]
    renderer.handle(ev(task_list_updated=loop_pb2.TaskListUpdated(goal="ship", items=items)))
    renderer.handle(ev(task_list_updated=loop_pb2.TaskListUpdated(goal="ship", items=items)))
    lines = out.getvalue().splitlines()
    assert lines == ["  tasks 1/2 · ship", "  ☑ write tests", "  ◐ fix bug"]


def test_approval_and_question_are_remembered_until_resolved() -> None:
    renderer, out = make()
    renderer.handle(ev(approval_requested=loop_pb2.ApprovalRequested(request_id="r1", tool="bash", preview="rm -rf x")))
    assert renderer.pending_approval is not None
    assert "Enter = deny" in out.getvalue()
    renderer.handle(ev(approval_resolved=loop_pb2.ApprovalResolved(
        request_id="r1", decision=loop_pb2.APPROVAL_DECISION_DENY, source="user")))
    assert renderer.pending_approval is None
    renderer.handle(ev(question_asked=loop_pb2.QuestionAsked(request_id="q1", question="Which?", options=["a", "b"])))
    assert "  2. b" in out.getvalue().splitlines()
    renderer.handle(ev(question_resolved=loop_pb2.QuestionResolved(request_id="q1", answer="b")))
    assert renderer.pending_question is None


def _strip_sgr(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_line_buffered_mode_prints_whole_lines_and_keeps_the_rest_pending() -> None:
    out = io.StringIO()
    renderer = EventRenderer(Console(file=out, width=80, color_system=None), line_buffered=True)
    renderer.handle(ev(text_delta=loop_pb2.TextDelta(text="first li")))
    assert out.getvalue() == ""
    assert renderer.partial_text == "first li"
    renderer.handle(ev(text_delta=loop_pb2.TextDelta(text="ne\nsecond")))
    assert out.getvalue() == "first line\n"
    assert renderer.partial_text == "second"
    renderer.handle(finished())
    assert out.getvalue().splitlines()[:2] == ["first line", "second"]
    assert renderer.partial_text == ""


def test_streamed_markdown_is_styled_by_line_but_keeps_every_character() -> None:
    out = io.StringIO()
    renderer = EventRenderer(Console(file=out, width=80, force_terminal=True, color_system="standard"),
                             line_buffered=True)
    text = "# Title\nUse `x[0]` and **[bold]care[/bold]**\n```\nprint('[red]')\n```\nplain [i]\n"
    renderer.handle(ev(text_delta=loop_pb2.TextDelta(text=text)))
    raw = out.getvalue()
    assert _strip_sgr(raw) == text
    assert "\x1b[1m# Title" in raw
    assert "\x1b[36m`x[0]`" in raw
    assert "\x1b[36mprint('[red]')" in raw


def test_a_diff_preview_is_coloured_by_line_and_kept_literal() -> None:
    from clients.cli.render import preview_text

    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-old [b]\n+new [/b]\n"
    text = preview_text(diff)
    assert text.plain == diff
    styles = {text.plain[span.start:span.end]: str(span.style) for span in text.spans}
    assert styles == {"@@ -1 +1 @@": "cyan", "-old [b]": "red", "+new [/b]": "green"}
    assert preview_text("rm -rf build").spans == []


def test_a_long_unfinished_paragraph_is_printed_except_its_tail() -> None:
    out = io.StringIO()
    renderer = EventRenderer(Console(file=out, width=40, color_system=None), line_buffered=True)
    words = [f"w{i:03d}" for i in range(60)]  # 300 chars, no newline
    for word in words:
        renderer.handle(ev(text_delta=loop_pb2.TextDelta(text=word + " ")))
    assert len(renderer.partial_text) <= 3 * 40 + 5
    renderer.handle(finished())
    text = out.getvalue().split("●")[0]
    assert text.split() == words  # every word, in order, once


def test_bidi_override_marks_are_made_visible() -> None:
    assert visible_controls("admin\u202e\u2066txt.exe") == "admin\\u202e\\u2066txt.exe"


def test_skipped_events_render_as_one_dim_line_with_the_count_and_where_the_history_is() -> None:
    renderer, out = make()
    renderer.handle(ev(events_skipped=loop_pb2.EventsSkipped(from_seq=3, to_seq=1236, hint="ignored here")))
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    assert "1,234 earlier events skipped" in lines[0]
    assert "saved session has the full history" in lines[0] and "/resume" in lines[0]
    styled, styled_out = make(terminal=True)
    styled.handle(ev(events_skipped=loop_pb2.EventsSkipped(from_seq=5, to_seq=5)))
    assert "\x1b[2m" in styled_out.getvalue() and "1 earlier event skipped" in styled_out.getvalue()


def test_a_preview_warning_is_yellow_and_the_loops_notes_are_dim() -> None:
    from clients.cli.render import preview_text

    preview = ("⚠ this edit will fail: edit_no_match: old_string was not found in x.py\n"
               "(the intended change, from the call's arguments:)\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b")
    text = preview_text(preview)
    styles = {text.plain[span.start:span.end]: str(span.style) for span in text.spans}
    assert styles["⚠ this edit will fail: edit_no_match: old_string was not found in x.py"] == "bold yellow"
    assert styles["(the intended change, from the call's arguments:)"] == "dim"
    assert styles["-a"] == "red" and styles["+b"] == "green"
    assert preview_text("(cd build && make)").spans == []  # a bash command in parentheses stays plain


def test_a_job_that_job_stop_ended_is_drawn_as_a_success_not_as_exit_minus_9() -> None:
    renderer, out = make()
    data = '{"job_id": "j1", "status": "stopped", "exit_code": -9, "runtime_s": 3.2}'
    renderer.handle(ev(tool_finished=loop_pb2.ToolFinished(result=common_pb2.ToolResult(
        call_id="c1", tool="job_stop", ok=True, output="Stopped j1.", data_json=data, duration_ms=5))))
    assert out.getvalue().splitlines()[-1].startswith("✓ ")
    assert "exit -9" not in out.getvalue()
    renderer.handle(ev(tool_finished=loop_pb2.ToolFinished(result=common_pb2.ToolResult(
        call_id="c2", tool="job_output", ok=True, output="[j2 exited, exit code 2, 1.0 s]\nboom",
        data_json='{"job_id": "j2", "status": "exited", "exit_code": 2}', duration_ms=5))))
    assert out.getvalue().splitlines()[-1].startswith("✗ ") and "exit 2 · boom" in out.getvalue()
