"""One line per saved session, the same in every list: ``sessions list``, the /resume picker and the
candidates ``-r`` prints when it cannot pick (they had drifted: 70 vs 80 preview chars, a full vs
a 12-char id that is only the creation timestamp)."""

from __future__ import annotations

import datetime as dt

import pytest

from clients.cli.failures import CommandExit
from clients.cli.repl import resume
from clients.cli.run_command import pick_session
from clients.cli.session_rows import PREVIEW_CHARS, session_line

# Two sessions opened in the same millisecond share their first 12 id characters (the timestamp).
TWINS = ("0193a5c2e1f4b7d2a9c0", "0193a5c2e1f4e5f60718")


def _at(hour: int, minute: int) -> float:
    return dt.datetime(2026, 12, 1, hour, minute).timestamp()


def test_the_picker_and_the_resume_candidates_show_the_same_line(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [resume.SessionRow(TWINS[1], _at(14, 3), "fix\nthe   failing test", 12),
            resume.SessionRow(TWINS[0], _at(9, 30), "", 1)]
    with pytest.raises(CommandExit) as stopped:
        pick_session(rows, continue_last=False, resume=TWINS[0][:12], command="run")
    assert stopped.value.code == 2
    printed = capsys.readouterr().err.splitlines()
    assert printed[:2] == [f"  2026-12-01 {resume.row_line(row)}" for row in rows]
    assert resume.row_line(rows[0]) == f"14:03  fix the failing test  (12 messages)  {TWINS[1]}"
    assert resume.row_line(rows[1]) == f"09:30  (empty)  (1 message)  {TWINS[0]}"
    assert "matches 2 sessions" in printed[-1]


def test_a_long_preview_is_cut_with_an_ellipsis_and_the_whole_id_stays() -> None:
    row = resume.SessionRow(TWINS[0], _at(23, 59), "word " * 100, 3)
    line = session_line(row, dated=True)
    preview = line.split("  ")[1]
    assert len(preview) == PREVIEW_CHARS and preview.endswith("…") and preview.startswith("word word")
    assert line.startswith("2026-12-01 23:59  ") and line.endswith(f"(3 messages)  {TWINS[0]}")
