"""Session persistence: journal + snapshot, torn and corrupt files, camelCase shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.loop.core.errors import SessionNotFound
from services.loop.core.sessions import SessionStore, message_from_disk, message_to_disk, salvage_messages


def _call(cid: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": cid, "type": "function", "function": {"name": "read", "arguments": "{}"}}]}


def test_each_save_appends_only_the_new_messages_and_a_reload_sees_them_all(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.create("fake")
    session.messages.append({"role": "user", "content": "hi"})
    store.save(session)
    size_after_one = store.journal_path(session.id).stat().st_size
    session.messages += [_call("c1"), {"role": "tool", "tool_call_id": "c1", "content": "file text"}]
    store.save(session)
    grown = store.journal_path(session.id).stat().st_size - size_after_one
    assert grown < 1000  # the second record holds two messages, not the whole history
    loaded, warnings = SessionStore(tmp_path).load(session.id)
    assert warnings == []
    assert [m["role"] for m in loaded.messages] == ["user", "assistant", "tool"]
    assert loaded.messages[1]["tool_calls"][0]["id"] == "c1"


def test_the_compaction_state_is_journaled_when_it_changes_and_a_reload_sees_the_latest(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.create("fake")
    bulky = {"compactions": 1, "overlays": {"3": {"layer": "L2", "digest": "d", "content": "x" * 20_000}}}
    session.compaction = bulky
    for n in range(5):  # five steps under one unchanged state: written once, not five times
        session.messages.append({"role": "user", "content": f"step {n}"})
        session.compaction = json.loads(json.dumps(bulky))  # as the runtime does: a fresh dict each save
        store.save(session)
    records = [json.loads(line) for line in store.journal_path(session.id).read_text().splitlines()[1:]]
    assert sum("compaction" in r["meta"] for r in records) == 1
    session.compaction = {"compactions": 2}
    session.turn_digests = ["turn 1 [completed]: hi -> hello"]
    store.save(session)
    loaded, _ = SessionStore(tmp_path).load(session.id)
    assert loaded.compaction == {"compactions": 2} and loaded.turn_digests == ["turn 1 [completed]: hi -> hello"]
    assert len(loaded.messages) == 5


def test_the_snapshot_is_camel_case_like_the_spec(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.create("fake")
    session.messages += [{"role": "user", "content": "x"}, _call("c1"),
                         {"role": "tool", "tool_call_id": "c1", "content": "y"}]
    store.compact(session)
    doc = json.loads(store.snapshot_path(session.id).read_text())
    assert {"id", "createdAt", "updatedAt", "messages", "taskState", "lastSeq"} <= set(doc)
    assert doc["messages"][1]["toolCalls"] == [{"id": "c1", "name": "read", "arguments": "{}"}]
    assert doc["messages"][2]["toolCallId"] == "c1"
    assert all("timestamp" in m for m in doc["messages"])


def test_a_torn_last_journal_record_is_dropped_with_a_warning(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.create("fake")
    session.messages.append({"role": "user", "content": "kept"})
    store.save(session)
    with open(store.journal_path(session.id), "ab") as fh:
        fh.write(b'{"at": 1, "messages": [{"role": "assistant", "content": "half')
    loaded, warnings = SessionStore(tmp_path).load(session.id)
    assert [m["content"] for m in loaded.messages] == ["kept"]
    assert any("torn" in w for w in warnings)


def test_a_corrupt_snapshot_is_moved_aside_and_its_complete_messages_are_recovered(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.create("fake")
    session.messages += [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]
    store.compact(session)
    path = store.snapshot_path(session.id)
    raw = path.read_text()
    path.write_text(raw[: raw.index('"two"') + 3])  # cut inside the second message
    loaded, warnings = SessionStore(tmp_path).load(session.id)
    assert [m["content"] for m in loaded.messages] == ["one"]
    assert any("corrupt" in w and "recovered 1" in w for w in warnings)
    assert list(path.parent.glob(f"{session.id}.json.corrupt-*"))
    assert json.loads(path.read_text())["messages"][0]["content"] == "one"  # a clean file again


def test_an_unpaired_tool_call_on_disk_is_repaired_on_load(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.create("fake")
    session.messages += [{"role": "user", "content": "x"}, _call("c9")]
    store.save(session)  # killed before the tool batch was saved
    loaded, warnings = SessionStore(tmp_path).load(session.id)
    assert [m["role"] for m in loaded.messages] == ["user", "assistant", "tool"]
    assert loaded.messages[2]["tool_call_id"] == "c9"
    assert any("repaired" in w for w in warnings)


def test_a_journal_from_before_the_current_snapshot_is_not_replayed_twice(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.create("fake")
    session.messages.append({"role": "user", "content": "a"})
    store.save(session)
    old_journal = store.journal_path(session.id).read_bytes()
    store.compact(session)  # a crash right after the snapshot, before the journal reset:
    store.journal_path(session.id).write_bytes(old_journal)
    loaded, _ = SessionStore(tmp_path).load(session.id)
    assert [m["content"] for m in loaded.messages] == ["a"]


def test_prefixes_resolve_to_one_session_and_unknown_ones_say_what_to_do(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.create("fake")
    assert store.resolve(session.id[:14]) == session.id
    with pytest.raises(SessionNotFound, match="sessions list"):
        store.resolve("zzzz")


def test_salvage_stops_at_the_first_broken_message() -> None:
    text = '{"id": "x", "messages": [{"role": "user", "content": "a"}, {"role": "assis'
    assert salvage_messages(text) == [{"role": "user", "content": "a"}]


def test_messages_round_trip_between_memory_and_disk_shapes() -> None:
    message = _call("c1")
    assert message_from_disk(message_to_disk(message))["tool_calls"] == message["tool_calls"]


def test_listing_uses_the_small_summary_file_while_it_is_current(tmp_path: Path) -> None:
    import os

    store = SessionStore(tmp_path)
    session = store.create("fake")
    session.messages.append({"role": "user", "content": "what is in the summary"})
    store.save(session)
    store.maybe_compact(session)  # turn end: the summary file is rewritten
    snap = store.snapshot_path(session.id)
    stat = snap.stat()
    snap.write_text("not json at all")  # were the snapshot read, this would fail or salvage nothing
    os.utime(snap, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    summary = store.summary(session.id)
    assert summary.preview == "what is in the summary" and summary.message_count == 1


def test_a_summary_older_than_the_journal_is_not_trusted(tmp_path: Path) -> None:
    import os

    store = SessionStore(tmp_path)
    session = store.create("fake")
    meta = store.summary_path(session.id)
    old = meta.stat().st_mtime_ns - 10_000_000_000
    os.utime(meta, ns=(old, old))
    session.messages.append({"role": "user", "content": "newer than the summary"})
    store.save(session)  # killed before turn end: only the journal has it
    assert store.summary(session.id).message_count == 1
