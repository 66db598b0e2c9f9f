"""The rewind seam: every feature's state slot goes back to its value at the end of the kept turn
(a slot of a feature written later rewinds with no code of its own), a slot may derive its value
instead, and the checkpoints state keeps each distinct slot value once and forgets it with its turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from services.loop.checkpoints.state import SLOT, VALUES, CheckpointState, TurnMark, decode, encode
from services.loop.core.feature import Feature, RewindPoint, StateSlot
from services.loop.core.sessions import Session
from services.loop.tracing.writer import TraceWriter

NOTES = StateSlot[list[str]]("notes", decode=lambda raw: list(raw) if isinstance(raw, list) else [],
                             encode=lambda notes: notes or None)
COUNTER = StateSlot[int]("counter", decode=lambda raw: raw if isinstance(raw, int) else 0, encode=lambda n: n,
                         rewind=lambda value, point: min(value, point.messages))


class NewFeature(Feature):
    """A feature with no rewind code: its slots rewind through the seam."""

    slots: tuple[StateSlot[Any], ...] = (NOTES, COUNTER)


def test_a_feature_without_rewind_code_gets_its_slots_back_and_a_deriving_slot_derives() -> None:
    session = Session("s", "/ws")
    NOTES.write(session, ["kept", "later"])
    COUNTER.write(session, 9)
    NewFeature().rewind(session, RewindPoint(turn=2, messages=4, saved={"notes": ["kept"]}))
    assert NOTES.read(session) == ["kept"] and COUNTER.read(session) == 4
    NewFeature().rewind(session, RewindPoint(turn=0, messages=0))
    assert "notes" not in session.slots and COUNTER.read(session) == 0


def test_each_distinct_slot_value_is_kept_once_and_goes_with_the_last_turn_that_named_it() -> None:
    state = CheckpointState()
    for turn, plan in ((1, "a"), (2, "a"), (3, "b")):
        state.turns.append(TurnMark(turn, f"p{turn}", float(turn), turn * 2))
        state.turns[-1].saved = state.keep_slots({"plan": {"goal": plan}, "acceptance": []})
    assert len(state.blobs) == 3  # {"goal": "a"}, {"goal": "b"}, []
    point = state.point(2, 4, 3.0)
    assert point.saved == {"plan": {"goal": "a"}, "acceptance": []} and point.since == 3.0
    state.cut(2)
    assert [t.turn for t in state.turns] == [1, 2] and len(state.blobs) == 2
    again = decode(encode(state))
    assert "blobs" not in json.dumps(encode(state)) and again.point(2, 4, 3.0).saved == {}  # kept apart:
    again.blobs = VALUES.decode(VALUES.encode(state.blobs))  # the values change at turn ends only
    assert again.point(2, 4, 3.0).saved == point.saved and SLOT.key != VALUES.key


def test_a_turn_recorded_before_snapshots_has_none_and_an_unknown_turn_rewinds_to_empty() -> None:
    old = decode({"turns": [{"turn": 1, "prompt": "p", "at": 1.0, "messageIndex": 0}]})
    assert old.turns[0].saved is None
    assert old.point(7, 0, 0.0).saved == {}


def test_the_traces_of_dropped_turns_are_set_aside_and_leave_the_summary(tmp_path: Path) -> None:
    writer = TraceWriter(str(tmp_path), "s1")
    for turn in (1, 2, 3):
        writer.start_turn(turn)
    writer.dir.joinpath("summary.json").write_text(json.dumps({"session": "s1", "turns": [
        {"turn": 1}, {"turn": 2}, {"turn": 3}]}))
    writer.rewind(1, 1700)
    names = sorted(p.name for p in writer.dir.iterdir())
    assert names == ["rewound-1700-turn-2.jsonl", "rewound-1700-turn-3.jsonl", "summary.json", "turn-1.jsonl"]
    assert json.loads(writer.dir.joinpath("summary.json").read_text())["turns"] == [{"turn": 1}]
