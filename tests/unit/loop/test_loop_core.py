"""Pure parts of the loop core: pairing, the event log, prompt assembly, previews, approvals."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from services.loop.core.approvals import Decision, Pending, RequestKind, Resolution
from services.loop.core.events import EventLog
from services.loop.core.pairing import MISSING_RESULT, repair_pairing
from services.loop.core.turn_events import Notice
from services.loop.tools.previews import approval_preview
from services.loop.turn.prompt import assemble, build_instructions, tail_blocks


def _call(*ids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "read", "arguments": "{}"}} for i in ids]}


def test_paired_history_comes_back_untouched() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "x"}, _call("a"), {"role": "tool", "tool_call_id": "a", "content": "r"}]
    repaired, fixes = repair_pairing(history)
    assert repaired is history and fixes == 0


def test_missing_results_are_filled_in_call_order_and_orphans_dropped() -> None:
    history: list[dict[str, Any]] = [{"role": "tool", "tool_call_id": "zz", "content": "orphan"}, _call("a", "b"),
               {"role": "tool", "tool_call_id": "b", "content": "rb"}, {"role": "user", "content": "next"}]
    repaired, fixes = repair_pairing(history)
    assert [(m["role"], m.get("tool_call_id")) for m in repaired] == [
        ("assistant", None), ("tool", "a"), ("tool", "b"), ("user", None)]
    assert repaired[1]["content"] == MISSING_RESULT and fixes == 2


def test_a_follower_after_a_seq_gets_each_later_event_once_then_live_ones() -> None:
    async def scenario() -> list[int]:
        log = EventLog("s1")
        for _ in range(5):
            log.emit(1, Notice(level="info", text="x"))
        done = False
        got: list[int] = []

        async def follow() -> None:
            async for event in log.follow(3, lambda: done):
                got.append(event.seq)

        task = asyncio.create_task(follow())
        await asyncio.sleep(0)
        log.emit(1, Notice(level="info", text="live"))
        await asyncio.sleep(0)
        done = True
        log.wake()
        await asyncio.wait_for(task, 5)
        return got

    assert asyncio.run(scenario()) == [4, 5, 6]


def test_numbering_continues_from_the_saved_last_seq() -> None:
    async def scenario() -> int:
        return EventLog("s1", last_seq=41).emit(1, Notice(level="info", text="x")).seq

    assert asyncio.run(scenario()) == 42


def test_the_tail_rides_on_the_last_message_and_the_rest_is_unchanged() -> None:
    instructions = build_instructions("base", "<project-notes file=\"AGENTS.md\">use pytest</project-notes>", "")
    history: list[dict[str, Any]] = [{"role": "user", "content": "fix it", "_ts": 1.0}]
    tail = tail_blocks({"environment": "cwd: /w", "task-state": "[ ] 1. fix"})
    messages, stats = assemble(instructions, history, tail, [])
    assert messages[0]["content"].startswith("base") and "use pytest" in messages[0]["content"]
    assert messages[1]["content"].startswith("fix it\n\n<task-state>")
    assert messages[1]["content"].index("<task-state>") < messages[1]["content"].index("<environment>")
    assert "_ts" not in messages[1]
    assert stats.tail_parts == {"task-state": len(tail[0][1]), "environment": len(tail[1][1])}
    grown = [*history, {"role": "assistant", "content": "done"}, {"role": "user", "content": "more"}]
    later, _ = assemble(instructions, grown, tail, [])
    assert json.dumps(later[:1]) == json.dumps(messages[:1])
    assert later[1] == {"role": "user", "content": "fix it"}


def test_edit_approvals_preview_a_unified_diff() -> None:
    preview = approval_preview("edit", {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})
    assert "--- a/a.py" in preview and "-x = 1" in preview and "+x = 2" in preview


def test_an_answer_to_an_unknown_or_settled_request_changes_nothing() -> None:
    async def scenario() -> tuple[bool, bool, dict[str, RequestKind], Decision]:
        pending = Pending(3)
        rid, future = pending.open(RequestKind.APPROVAL)
        unknown = pending.resolve(Resolution("t3-a99", Decision.ALLOW_ONCE))
        first = pending.resolve(Resolution(rid, Decision.DENY))
        again = pending.resolve(Resolution(rid, Decision.ALLOW_ONCE))
        _other, _other_future = pending.open(RequestKind.QUESTION)
        cleared = pending.clear()
        return unknown or again, first, cleared, (await future).decision

    changed, first, cleared, decision = asyncio.run(scenario())
    assert not changed and first and decision == Decision.DENY
    assert cleared == {"t3-q2": RequestKind.QUESTION}


def test_the_history_view_appends_only_new_messages_and_rebuilds_after_a_rewrite() -> None:
    from services.loop.turn.prompt import HistoryView

    view = HistoryView()
    history: list[dict[str, Any]] = [{"role": "user", "content": "a", "_ts": 1.0}]
    first, size = view.update(history)
    assert first == [{"role": "user", "content": "a"}] and size > 0
    history += [_call("c1"), {"role": "tool", "tool_call_id": "c1", "content": "r"}]
    grown, _ = view.update(history)
    assert grown is first and len(grown) == 3  # extended in place, not rebuilt
    history[:] = [{"role": "user", "content": "summary"}]  # a rewrite (e.g. compaction)
    rebuilt, _ = view.update(history)
    assert rebuilt == [{"role": "user", "content": "summary"}]
    history.append(_call("c2"))  # a step whose results never came
    history.append({"role": "user", "content": "next"})
    repaired, _ = view.update(history)
    assert [m["role"] for m in repaired] == ["user", "assistant", "tool", "user"] and view.repairs == 1
