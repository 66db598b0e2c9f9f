"""Approval previews of write/edit from the tools service's dry run (pure: no service here)."""

from __future__ import annotations

from services.loop.core.ports import ToolOutcome
from services.loop.tools.previews import (
    MAX_WARNING_LINES,
    approval_preview,
    changed_first,
    checked_preview,
    wants_dry_run,
)

EDIT = {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
REAL_DIFF = "--- a/a.py\n+++ b/a.py\n@@ -41,3 +41,3 @@\n y = 0\n-x = 1\n+x = 2\n z = 3\n"


def test_only_write_and_edit_ask_for_a_dry_run() -> None:
    assert wants_dry_run("edit") and wants_dry_run("write")
    assert not wants_dry_run("bash") and not wants_dry_run("read") and not wants_dry_run("mcp_call")


def test_a_successful_dry_run_shows_the_real_diff_with_its_hunk_lines() -> None:
    dry = ToolOutcome("c1", "edit", True, REAL_DIFF, data={"diff": REAL_DIFF, "dry_run": True})
    preview = checked_preview("edit", EDIT, dry)
    assert preview == REAL_DIFF.rstrip("\n")
    assert "@@ -41,3 +41,3 @@" in preview and "⚠" not in preview and "no file context" not in preview


def test_a_dry_run_that_would_fail_warns_first_and_still_shows_the_intended_change() -> None:
    output = "Error: old_string was not found in a.py\nClosest passages in the file:\n" + "\n".join(
        f"{n:>6}\tline {n}" for n in range(1, 40))
    dry = ToolOutcome("c1", "edit", False, output, error_code="edit_no_match",
                      error_message="old_string was not found in a.py Closest passages")
    lines = checked_preview("edit", EDIT, dry).split("\n")
    assert lines[0] == "⚠ this edit will fail: edit_no_match: old_string was not found in a.py"
    assert lines[1] == "Closest passages in the file:"
    assert lines[MAX_WARNING_LINES] == "..."  # the long hint is cut, the intended diff follows
    assert "-x = 1" in lines and "+x = 2" in lines


def test_no_answer_falls_back_to_the_arguments_diff_and_says_so() -> None:
    preview = checked_preview("edit", EDIT, None, "did not answer within 2 s")
    first, rest = preview.split("\n", 1)
    assert first.startswith("(no file context: the tool service did not answer within 2 s")
    assert rest == approval_preview("edit", EDIT)


def test_a_write_that_changes_nothing_says_so() -> None:
    dry = ToolOutcome("c1", "write", True, "a.py unchanged.", data={"diff": "", "dry_run": True})
    assert checked_preview("write", {"path": "a.py", "content": "x"}, dry) == \
        "a.py: no change (the new content equals the file)"


def test_a_file_an_earlier_call_of_the_batch_writes_or_a_command_may_touch_counts_as_changed_first() -> None:
    assert changed_first(EDIT, [("edit", {"path": "./a.py", "old_string": "a", "new_string": "b"})])
    assert changed_first(EDIT, [("bash", {"command": "sed -i s/x/y/ a.py"})])
    assert not changed_first(EDIT, [("edit", {"path": "b.py", "old_string": "a", "new_string": "b"})])
    assert not changed_first(EDIT, [("read", {"path": "a.py"}), ("grep", {"pattern": "x"})])
    assert not changed_first(EDIT, [])


def test_when_an_earlier_call_changes_the_file_first_the_dry_run_is_not_presented_as_the_outcome() -> None:
    failed = ToolOutcome("c2", "edit", False, "Error: old_string was not found in a.py", error_code="edit_no_match")
    lines = checked_preview("edit", EDIT, failed, changed_first=True).split("\n")
    assert lines[0] == "⚠ this edit would fail on the file as it is now: edit_no_match: old_string was not found in a.py"
    assert lines[1].startswith("(checked against the file as it is now: an earlier call of this batch runs first")
    ok = ToolOutcome("c2", "edit", True, REAL_DIFF, data={"diff": REAL_DIFF})
    shown = checked_preview("edit", EDIT, ok, changed_first=True).split("\n")
    assert shown[0].startswith("(diff against the file as it is now") and shown[1:] == REAL_DIFF.rstrip("\n").split("\n")
