"""The /rewind picker's pure parts: the rows it lists from /checkpoints' JSON, their line, what can
be taken back from a turn on, and the /rewind it sends (to just before the picked turn)."""

from __future__ import annotations

import json

from clients.cli.repl.rewind_picker import (
    BOTH,
    CODE,
    CONVERSATION,
    TurnRow,
    choices_for,
    opens,
    rewind_args,
    row_text,
    rows_of,
)


def test_rows_come_oldest_first_and_malformed_entries_are_left_out() -> None:
    raw = json.dumps({"turns": [{"turn": 2, "at": 0, "prompt": "b", "steps": 1, "files": [{"path": "x"}]},
                                {"turn": "x"}, "junk", {"turn": 1, "at": 0, "prompt": "a"}]})
    assert [r.turn for r in rows_of(raw)] == [1, 2] and rows_of(raw)[1].files == [{"path": "x"}]
    assert rows_of("not json") == [] and rows_of('{"turns": 3}') == []


def test_a_row_shows_the_prompts_first_line_cut_and_the_files_with_counts() -> None:
    row = TurnRow(3, 0.0, "fix the parser\nand more\x1b[31m", files=[
        {"path": "a.py", "added": 3, "removed": 1}, {"path": "b.bin", "binary": True},
        {"path": "c", "added": 1, "removed": 0}, {"path": "d", "added": 0, "removed": 2}])
    text = row_text(row)
    assert text.startswith("turn 3 · ") and "· fix the parser · " in text and "and more" not in text
    assert text.endswith("4 files: a.py +3 -1, b.bin, c +1 -0 and 1 more")
    long = row_text(TurnRow(1, 0.0, "y" * 100))
    assert "y" * 59 + "…" in long and "no files changed" in long


def test_what_can_be_taken_back_depends_on_later_steps_and_the_recorded_turn_before() -> None:
    rows = [TurnRow(1, 0, "a", steps=1), TurnRow(2, 0, "b", conversation=False), TurnRow(3, 0, "c")]
    assert choices_for(rows, 0) == [BOTH, CONVERSATION, CODE]
    assert choices_for(rows, 1) == [CONVERSATION]  # nothing changed files from turn 2 on
    assert choices_for(rows, 2) == []  # turn 2 was not recorded, and no step since
    assert rewind_args(rows[1], CONVERSATION) == "1 --conversation" and rewind_args(rows[0], BOTH) == "0 --both"


def test_only_a_bare_rewind_opens_the_picker() -> None:
    assert opens("rewind", "  ") and not opens("rewind", "2 --code") and not opens("undo", "")
