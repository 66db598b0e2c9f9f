"""Write/edit diffs in the client: read from the tool result data, drawn inline (folded), and /diff."""

from __future__ import annotations

import io
import json

from ai_coding.v1 import common_pb2, loop_pb2
from rich.console import Console

from clients.cli import convert, views
from clients.cli.diffview import (
    DiffLog,
    FileDiff,
    Scope,
    combined,
    diff_command,
    diff_text,
    edit_diff,
    parse_scope,
)
from clients.cli.render import EventRenderer

EDIT_DIFF = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n a = 1\n-b = 2\n+b = 3\n+c = 4\n"


def _edit_data(diff: str = EDIT_DIFF, **extra: object) -> str:
    return json.dumps({"path": "calc.py", "replacements": 1, "diff": diff, **extra})


def test_an_edit_result_gives_its_diff_with_added_and_removed_counts() -> None:
    change = edit_diff("edit", "{}", True, _edit_data())
    assert change == FileDiff("calc.py", EDIT_DIFF)
    assert (change.added, change.removed) == (2, 1)


def test_a_created_file_shows_its_content_as_added_lines() -> None:
    args = json.dumps({"path": "new.py", "content": "x = 1\ny = 2\n"})
    change = edit_diff("write", args, True, json.dumps({"path": "new.py", "created": True, "lines": 2, "diff": ""}))
    assert change is not None and change.created
    assert change.diff.splitlines()[-2:] == ["+x = 1", "+y = 2"]
    assert (change.added, change.removed) == (2, 0)


def test_failed_dry_run_and_other_tools_have_no_diff() -> None:
    assert edit_diff("edit", "{}", False, _edit_data()) is None
    assert edit_diff("edit", "{}", True, _edit_data(dry_run=True)) is None
    assert edit_diff("bash", "{}", True, _edit_data()) is None
    assert edit_diff("write", "{}", True, json.dumps({"path": "a", "created": False, "diff": ""})) is None
    assert edit_diff("edit", "{}", True, "not json") is None


def test_a_long_diff_folds_past_the_height_with_a_way_to_see_it_all() -> None:
    diff = "--- a/f\n+++ b/f\n@@ -1,30 +1,30 @@\n" + "".join(f"+line {n}\n" for n in range(30))
    shown = diff_text(diff, fold=12).plain.splitlines()
    assert len(shown) == 13
    assert shown[0] == "    @@ -1,30 +1,30 @@"
    assert shown[-1] == "    … 19 more lines (/diff shows all)"
    assert len(diff_text(diff, fold=None).plain.splitlines()) == 33


def test_diff_lines_carry_gits_colours() -> None:
    text = diff_text(EDIT_DIFF)
    styles = {text.plain[span.start:span.end].strip(): str(span.style) for span in text.spans}
    assert styles["-b = 2"] == "red" and styles["+b = 3"] == "green" and styles["@@ -1,2 +1,3 @@"] == "cyan"


def test_the_turns_changes_combine_into_one_diff_with_one_header_per_file() -> None:
    log = DiffLog()
    log.add(FileDiff("calc.py", EDIT_DIFF))
    log.start_turn()
    log.add(FileDiff("calc.py", EDIT_DIFF.replace("c = 4", "d = 5")))
    log.add(FileDiff("b.py", "--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-x\n+y\n"))
    assert len(log.changes(Scope.TURN)) == 2 and len(log.changes(Scope.SESSION)) == 3
    one = combined(log.changes(Scope.SESSION))
    assert one.count("+++ b/calc.py") == 1 and one.count("@@ -1,2 +1,3 @@") == 2
    assert one.index("+d = 5") < one.index("+++ b/b.py")
    out = diff_command(log, "").plain
    assert out.startswith("2 files changed, +3 -2 this turn") and "+c = 4" not in out
    assert "+c = 4" in diff_command(log, "session").plain


def test_diff_command_says_when_nothing_changed_and_what_it_takes() -> None:
    assert "no file changes in this turn" in diff_command(DiffLog(), "").plain
    assert parse_scope("session") is Scope.SESSION and parse_scope("") is Scope.TURN
    assert "takes nothing" in diff_command(DiffLog(), "bogus").plain


def _event(**kwargs: object) -> views.Event:
    return convert.event(loop_pb2.TurnEvent(seq=1, session_id="s", turn=1, **kwargs))  # type: ignore[arg-type]


def test_an_edit_is_drawn_as_its_result_line_then_its_diff_and_recorded_for_slash_diff() -> None:
    out = io.StringIO()
    renderer = EventRenderer(Console(file=out, width=100, color_system=None))
    renderer.handle(_event(turn_started=loop_pb2.TurnStarted(turn=1)))
    renderer.handle(_event(tool_started=loop_pb2.ToolStarted(
        call_id="c1", tool="edit", arguments_json='{"path": "calc.py"}', title="Editing · calc.py")))
    renderer.handle(_event(tool_finished=loop_pb2.ToolFinished(result=common_pb2.ToolResult(
        call_id="c1", tool="edit", ok=True, output="Edited calc.py: 1 replacement.\n" + EDIT_DIFF,
        data_json=_edit_data(), duration_ms=3))))
    lines = out.getvalue().splitlines()
    assert lines[1] == "✓ Editing · calc.py · Edited calc.py: 1 replacement. · +2 -1 · 3ms"
    assert lines[2:] == ["    @@ -1,2 +1,3 @@", "     a = 1", "    -b = 2", "    +b = 3", "    +c = 4"]
    assert renderer.diffs.changes(Scope.TURN) == [FileDiff("calc.py", EDIT_DIFF)]


def test_a_failure_before_any_work_is_one_line_with_its_reason_and_no_footer() -> None:
    out = io.StringIO()
    renderer = EventRenderer(Console(file=out, width=80, color_system=None))
    reason = "model auth: the endpoint refused the key (HTTP 401); check models.default.api_key " + "x" * 200
    renderer.handle(_event(turn_finished=loop_pb2.TurnFinished(status=loop_pb2.TURN_STATUS_FAILED, reason=reason)))
    assert out.getvalue() == f"error: {reason}\n"


def test_the_last_folded_diff_is_kept_for_the_unfold_key_until_it_is_shown() -> None:
    short = FileDiff("a.py", EDIT_DIFF)
    long = FileDiff("b.py", "--- a/b.py\n+++ b/b.py\n@@ -1,20 +1,20 @@\n" + "".join(f"+n{n}\n" for n in range(20)))
    log = DiffLog()
    log.add(long)
    log.add(short)  # a later short diff is drawn whole: the folded one is still the one to unfold
    assert log.folded == long
    assert log.unfold() == long and log.unfold() is None
    log.add(short)
    assert log.unfold() is None


def test_the_folded_line_names_what_shows_the_rest_the_repls_key_or_the_repl_after_run() -> None:
    diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1,1 +1,30 @@\n" + "".join(f"+x{n} = {n}\n" for n in range(30))
    from clients.cli.diffview import RUN_HINT, fold_hint

    for given, hint in ((fold_hint("Ctrl-O"), "(Ctrl-O unfolds · /diff shows all)"),
                        (RUN_HINT, "(`ai-coding -c` then /diff session shows all)")):
        out = io.StringIO()
        renderer = EventRenderer(Console(file=out, width=100, color_system=None), fold_hint=given)
        renderer.handle(_event(tool_started=loop_pb2.ToolStarted(call_id="c1", tool="edit", title="Editing · calc.py")))
        renderer.handle(_event(tool_finished=loop_pb2.ToolFinished(result=common_pb2.ToolResult(
            call_id="c1", tool="edit", ok=True, output="Edited calc.py.", data_json=_edit_data(diff)))))
        assert out.getvalue().splitlines()[-1] == f"    … 19 more lines {hint}"
        assert renderer.diffs.folded is not None and renderer.diffs.folded.path == "calc.py"


def test_a_saved_record_gives_back_its_writes_and_edits_for_slash_diff_session() -> None:
    from clients.cli.diffview import recorded_changes

    messages = [
        {"role": "user", "content": "change calc"},
        {"role": "assistant", "content": "", "toolCalls": [
            {"id": "e1", "name": "edit", "arguments": '{"path": "calc.py"}'},
            {"id": "w1", "name": "write", "arguments": json.dumps({"path": "new.py", "content": "x = 1\n"})},
            {"id": "e2", "name": "edit", "arguments": "{}"},
            {"id": "r1", "name": "read", "arguments": "{}"}]},
        {"role": "tool", "toolCallId": "e1", "content": "Edited calc.py: 1 replacement.\n" + EDIT_DIFF},
        {"role": "tool", "toolCallId": "w1", "content": "Created new.py (1 lines)."},
        {"role": "tool", "toolCallId": "e2", "content": "edit_no_match: old_string is not in calc.py"},
        {"role": "tool", "toolCallId": "r1", "content": "Edited calc.py: 1 replacement.\n" + EDIT_DIFF},
    ]
    changes = recorded_changes(json.dumps(messages))
    assert [(c.path, c.created) for c in changes] == [("calc.py", False), ("new.py", True)]
    assert changes[0].diff == EDIT_DIFF and changes[1].diff.endswith("+x = 1\n")
    assert recorded_changes("not json") == [] and recorded_changes('{"a": 1}') == []
