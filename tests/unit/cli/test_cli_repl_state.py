"""Pure REPL decisions: question answers, Ctrl-C, OSC 52, and the /resume helpers."""

from __future__ import annotations

import base64
import datetime as dt
import json

from clients.cli.repl import resume
from clients.cli.repl.state import ctrl_c, osc52, question_answer


def test_a_digit_picks_an_option_and_other_text_is_the_answer() -> None:
    options = ["red", "green"]
    assert question_answer("2", options) == "green"
    assert question_answer("3", options) == "3"
    assert question_answer(" blue ", options) == "blue"
    assert question_answer("", options) == ""


def test_ctrl_c_aborts_a_running_turn_and_exits_only_on_a_second_idle_press() -> None:
    assert ctrl_c(turn_running=True, line_empty=True, now=10, last_press=9.5).action == "abort_turn"
    assert ctrl_c(turn_running=False, line_empty=False, now=10, last_press=9.5).action == "clear_line"
    assert ctrl_c(turn_running=False, line_empty=True, now=10, last_press=None).action == "warn"
    assert ctrl_c(turn_running=False, line_empty=True, now=10, last_press=9.0).action == "exit"
    assert ctrl_c(turn_running=False, line_empty=True, now=10, last_press=5.0).action == "warn"


def test_osc52_carries_the_text_base64_encoded() -> None:
    seq = osc52("naïve [bold]")
    assert seq.startswith("\x1b]52;c;") and seq.endswith("\x07")
    assert base64.b64decode(seq[7:-1]).decode() == "naïve [bold]"


def _ts(day: dt.date, hour: int) -> float:
    return dt.datetime(day.year, day.month, day.day, hour).timestamp()


def test_sessions_group_by_day_newest_first_leaving_open_ones_out() -> None:
    today = dt.date(2026, 11, 29)
    rows = [resume.SessionRow("a1", _ts(today, 9), "fix tests", 4),
            resume.SessionRow("b2", _ts(today - dt.timedelta(days=1), 9), "yesterday work", 8),
            resume.SessionRow("c3", _ts(today, 11), "later today", 2),
            resume.SessionRow("d4", _ts(dt.date(2026, 11, 1), 9), "old", 1),
            resume.SessionRow("e5", _ts(today, 12), "open elsewhere", 3, open=True)]
    groups = resume.group_sessions(rows, today)
    assert [(label, [r.session_id for r in group]) for label, group in groups] == [
        ("Today", ["c3", "a1"]), ("Yesterday", ["b2"]), ("2026-11-01", ["d4"])]


def test_prefix_matching_is_unique_or_lists_candidates() -> None:
    rows = [resume.SessionRow("0113e0acac03", 1, "x", 1), resume.SessionRow("0113ffff0000", 2, "y", 1)]
    assert resume.match_prefix(rows, "0113e")[0] == rows[0]
    match, candidates = resume.match_prefix(rows, "0113")
    assert match is None and candidates == rows
    assert resume.filter_rows(rows, "Y") == [rows[1]]


def test_history_redraw_collapses_tool_calls_to_their_final_result() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": "", "toolCalls": [
            {"id": "c1", "name": "bash", "arguments": json.dumps({"command": "pytest -q"})},
            {"id": "c2", "name": "read", "arguments": json.dumps({"path": "missing.py"})},
            {"id": "c3", "name": "bash", "arguments": json.dumps({"command": "make"})},
            {"id": "c4", "name": "bash", "arguments": json.dumps({"command": "rm -rf build"})}]},
        {"role": "tool", "toolCallId": "c1", "content": "3 passed\nmore"},
        {"role": "tool", "toolCallId": "c2", "content": json.dumps({"ok": False, "error": "not found"})},
        {"role": "tool", "toolCallId": "c3", "content": "make: *** No rule\n(exit code 2)"},
        {"role": "tool", "toolCallId": "c4", "content": "denied_by_user: the user did not approve this call"},
        {"role": "assistant", "content": "All green."},
    ]
    items = resume.history_items(json.dumps(messages))
    assert [(i.kind, i.text, i.ok) for i in items] == [
        ("user", "run the tests", True),
        ("tool", "Running · pytest -q · 3 passed", True),
        ("tool", 'Reading · missing.py · {"ok": false, "error": "not found"}', False),
        ("tool", "Running · make · make: *** No rule", False),  # the command exited non-zero
        ("tool", "Running · rm -rf build · denied_by_user: the user did not approve this call", False),
        ("assistant", "All green.", True)]


def test_a_row_line_cuts_the_preview_to_80_chars() -> None:
    row = resume.SessionRow("abcdef0123456789", _ts(dt.date(2026, 1, 2), 14), "x" * 200, 12)
    line = resume.row_line(row)
    assert line.startswith("14:00  ") and "(12 messages)  abcdef012345" in line
    assert len(line.split("  ")[1]) == 80


def test_arrow_keys_cycle_through_the_options_and_wrap() -> None:
    from clients.cli.repl.state import cycle_option

    options = ["red", "green", "blue"]
    assert cycle_option(options, "", 1) == "red"
    assert cycle_option(options, "", -1) == "blue"
    assert cycle_option(options, "red", 1) == "green"
    assert cycle_option(options, "blue", 1) == "red"
    assert cycle_option(options, "red", -1) == "blue"
    assert cycle_option(options, "typed text", 1) == "red"


def test_the_picker_resumes_by_number_prefix_or_unique_words_and_filters_otherwise() -> None:
    rows = [resume.SessionRow("aaa111", 3, "fix the parser", 4), resume.SessionRow("bbb222", 2, "fix the lexer", 2),
            resume.SessionRow("ccc333", 1, "write docs", 6)]
    assert resume.pick(rows, "2").resume_id == "bbb222"
    assert resume.pick(rows, "ccc").resume_id == "ccc333"
    assert resume.pick(rows, "docs").resume_id == "ccc333"
    narrowed = resume.pick(rows, "fix")
    assert narrowed.resume_id == "" and narrowed.rows == rows[:2]
    assert resume.pick(rows, "zzz").rows == rows and "nothing matches" in resume.pick(rows, "zzz").message
    cancelled = resume.pick(rows, "")
    assert cancelled.rows is None and cancelled.message == "resume cancelled"


def test_history_and_group_lines_carry_their_styles() -> None:
    items = [resume.HistoryItem("user", "hi"), resume.HistoryItem("tool", "Reading · a.py", ok=False)]
    assert resume.history_lines(items)[1:3] == [("› hi", "bold"), ("✗ Reading · a.py", "red")]
    today = dt.date(2026, 11, 29)
    groups = resume.group_sessions([resume.SessionRow("x1", _ts(today, 9), "p", 1)], today)
    lines = resume.group_lines(groups)
    assert lines[0] == ("Today", "bold") and lines[1][0].startswith("   1. 09:00  p")


def test_only_known_words_or_nothing_answer_an_approval() -> None:
    from clients.cli.approvals import is_approval_answer

    assert all(is_approval_answer(w) for w in ("", "  ", "y", "YES", "a", "n", "no", "s", "stop"))
    assert not is_approval_answer("also fix the docs please")


def test_the_rest_of_an_answer_word_typed_right_after_the_key_is_not_a_message() -> None:
    from clients.cli.repl.state import is_answer_tail

    assert is_answer_tail("es", "y", 0.3) and is_answer_tail("lways", "a", 1.0) and is_answer_tail("o", "n", 0.1)
    assert not is_answer_tail("es", "y", 5.0)  # much later: a message of its own
    assert not is_answer_tail("es please fix x", "y", 0.3)
    assert not is_answer_tail("", "y", 0.1)


def test_a_redrawn_history_shows_a_call_without_a_result_as_pending_and_the_loops_nudges_as_notes() -> None:
    messages = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "", "toolCalls": [
            {"id": "c1", "name": "bash", "arguments": json.dumps({"command": "pytest -q"})}]},
        {"role": "tool", "toolCallId": "c1", "content": "1 failed\n(exit code 1)"},
        {"role": "user", "content": "[strategy-gate] Your tool calls have all failed for 3 steps in a row. Stop."},
        {"role": "user", "content": "[continue] Your last answer was cut off at the output token limit."},
        {"role": "assistant", "content": "", "toolCalls": [
            {"id": "c2", "name": "bash", "arguments": json.dumps({"command": "sleep 60"})}]},
    ]
    lines = resume.history_lines(resume.history_items(json.dumps(messages)))
    assert lines[1:6] == [
        ("› fix it", "bold"),
        ("✗ Running · pytest -q · 1 failed", "red"),
        ("  [strategy-gate] Your tool calls have all failed for 3 steps in a row. Stop.", "dim"),
        ("  [continue] Your last answer was cut off at the output token limit.", "dim"),
        ("▸ Running · sleep 60 · no result yet", "yellow"),
    ]
    assert "› [strategy-gate]" not in [text for text, _ in lines]
