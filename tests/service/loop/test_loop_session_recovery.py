"""Reopening a session through the real loop service after its snapshot was corrupted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.service.loop.harness import LoopStack, finished, status_name


def test_a_session_with_a_corrupt_snapshot_reopens_with_the_turns_its_journal_held(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    script = [
        {"match": "first question", "text": "FIRST_ANSWER"},
        {"match": "second question", "text": "SECOND_ANSWER"},
        {"match": "third question", "text": "THIRD_ANSWER"},
    ]
    first = make_stack(script)
    sid, events = first.turn("first question")
    assert status_name(finished(events)) == "completed", first.fake.errors
    _, events = first.turn("second question", session_id=sid)
    assert status_name(finished(events)) == "completed", first.fake.errors
    sessions = workspace / ".ai-coding" / "sessions"
    journal = sessions / f"{sid}.journal"
    crash_image = journal.read_bytes()  # both turns, appended since the session's first snapshot
    first.close()  # a clean stop folds the journal into the snapshot: put back what a kill -9 leaves
    journal.write_bytes(crash_image)
    (sessions / f"{sid}.json").write_text('{"id": "01a2')  # the QA repro
    second = make_stack()
    opened = second.open(sid)
    assert opened.message_count == 4, list(opened.warnings)
    assert any("recovered" in w and "journal record" in w for w in opened.warnings), list(opened.warnings)
    assert list(sessions.glob(f"{sid}.json.corrupt-*"))

    _, events = second.turn("third question", session_id=sid)
    assert status_name(finished(events)) == "completed", second.fake.errors
    history = [m.get("content") for m in second.fake.chat_requests[-1].messages]
    assert {"first question", "FIRST_ANSWER", "second question", "SECOND_ANSWER"} <= set(history)
