"""Reopening a session whose files are damaged: keep what can be used, set aside what cannot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.loop.core.errors import SessionUnreadable
from services.loop.core.sessions import Session, SessionStore


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def _saved_session(tmp_path: Path, *texts: str, compact_after: int = 0) -> tuple[SessionStore, Session]:
    """A session whose messages are ``texts``: the first ``compact_after`` in the snapshot,
    the rest in journal records of one message each."""
    store = SessionStore(tmp_path)
    session = store.create("fake")
    for n, text in enumerate(texts, start=1):
        session.messages.append(_user(text))
        store.save(session)
        if n == compact_after:
            store.compact(session)
    store.close(session.id)
    return store, session


def _contents(session: Session) -> list[str]:
    return [str(m["content"]) for m in session.messages]


def _aside(store: SessionStore, name: str) -> list[Path]:
    return sorted(store.dir.glob(f"{name}.corrupt-*"))


def test_a_snapshot_cut_to_a_stub_still_yields_the_messages_its_journal_holds(tmp_path: Path) -> None:
    store, session = _saved_session(tmp_path, "one", "two", "three")
    store.snapshot_path(session.id).write_text('{"id": "01a2')  # the QA repro
    loaded, warnings = SessionStore(tmp_path).load(session.id)
    assert _contents(loaded) == ["one", "two", "three"]
    assert any("recovered 3 message(s)" in w and "3 from 3 journal record(s)" in w for w in warnings)
    assert len(_aside(store, f"{session.id}.json")) == 1
    assert _aside(store, f"{session.id}.journal") == []  # every record was applied
    reopened, again = SessionStore(tmp_path).load(session.id)
    assert (_contents(reopened), again) == (["one", "two", "three"], [])


def test_records_starting_past_the_salvaged_messages_are_set_aside_with_a_warning(tmp_path: Path) -> None:
    store, session = _saved_session(tmp_path, "one", "two", "three", "four", compact_after=2)
    snap = store.snapshot_path(session.id)
    raw = snap.read_text()
    snap.write_text(raw[: raw.index('"two"') + 3])  # salvage keeps "one" only: "three" starts at 2
    loaded, warnings = SessionStore(tmp_path).load(session.id)
    assert _contents(loaded) == ["one"]
    [kept] = _aside(store, f"{session.id}.journal")
    assert any(kept.name in w for w in warnings)
    assert any("2 record(s) start past message 1" in w for w in warnings)


def test_a_journal_that_cannot_be_placed_is_kept_byte_for_byte_and_nothing_recovered_is_an_error(
        tmp_path: Path) -> None:
    store, session = _saved_session(tmp_path, "one", "two", "three", compact_after=2)
    journal_bytes = store.journal_path(session.id).read_bytes()
    store.snapshot_path(session.id).write_text('{"id": "01a2')
    with pytest.raises(SessionUnreadable) as err:  # never an empty history that looks like a new session
        SessionStore(tmp_path).load(session.id)
    [kept] = _aside(store, f"{session.id}.journal")
    [snapshot] = _aside(store, f"{session.id}.json")
    assert kept.read_bytes() == journal_bytes and snapshot.read_text() == '{"id": "01a2'
    assert f"({snapshot.name}, {kept.name} in {store.dir})" in str(err.value)
    assert "Restore those files from a backup, or start a new session" in str(err.value)


def test_salvage_and_a_journal_that_continues_it_are_joined(tmp_path: Path) -> None:
    store, session = _saved_session(tmp_path, "one", "two", "three", compact_after=2)
    snap = store.snapshot_path(session.id)
    doc = json.loads(snap.read_text())
    snap.write_text(json.dumps(doc)[:-2])  # lose only the closing brackets: both messages salvage
    loaded, warnings = SessionStore(tmp_path).load(session.id)
    assert _contents(loaded) == ["one", "two", "three"]
    assert any("(2 from the snapshot, 1 from 1 journal record(s))" in w for w in warnings)
    assert _aside(store, f"{session.id}.journal") == []


def test_a_stale_journal_does_not_cut_off_salvaged_messages_after_its_records(tmp_path: Path) -> None:
    store, session = _saved_session(tmp_path, "one", "two", "three")
    stale = store.journal_path(session.id).read_bytes()  # records at 0, 1, 2
    session.messages += [_user("four"), _user("five")]
    store.compact(session)
    store.close(session.id)
    store.journal_path(session.id).write_bytes(stale)  # crash between snapshot and journal reset
    snap = store.snapshot_path(session.id)
    doc = json.loads(snap.read_text())
    snap.write_text(json.dumps(doc)[:-2])
    loaded, _ = SessionStore(tmp_path).load(session.id)
    assert _contents(loaded) == ["one", "two", "three", "four", "five"]


def test_a_gap_in_the_journal_of_a_healthy_snapshot_sets_the_journal_aside(tmp_path: Path) -> None:
    store, session = _saved_session(tmp_path, "one", "two")
    journal = store.journal_path(session.id)
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(lines[0] + lines[2])  # record "at 1" without the one before it
    loaded, warnings = SessionStore(tmp_path).load(session.id)
    assert _contents(loaded) == []
    [kept] = _aside(store, f"{session.id}.journal")
    assert b"two" in kept.read_bytes()
    assert any("gap" in w for w in warnings) and any(kept.name in w for w in warnings)


def test_an_unreadable_record_mid_journal_is_kept_aside_but_a_torn_last_one_is_not(tmp_path: Path) -> None:
    store, session = _saved_session(tmp_path, "kept")
    with open(store.journal_path(session.id), "ab") as fh:
        fh.write(b'{"at": 1, "messages": [{"role": "assistant", "content": "half')
    loaded, warnings = SessionStore(tmp_path).load(session.id)
    assert _contents(loaded) == ["kept"]
    assert any("torn" in w for w in warnings)
    assert _aside(store, f"{session.id}.journal") == []  # the step in flight was never reported saved

    store, session = _saved_session(tmp_path, "one", "two")
    journal = store.journal_path(session.id)
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(lines[0] + lines[1] + b'{"at": 1, "mess\n' + lines[2])
    loaded, warnings = SessionStore(tmp_path).load(session.id)
    assert _contents(loaded) == ["one", "two"]
    [kept] = _aside(store, f"{session.id}.journal")
    assert b'{"at": 1, "mess' in kept.read_bytes()
    assert any("could not read record 3" in w for w in warnings)


def test_two_corruptions_in_the_same_second_are_both_kept(tmp_path: Path) -> None:
    store, session = _saved_session(tmp_path, "one")
    for stub in ('{"id": "first', '{"id": "second'):
        store.snapshot_path(session.id).write_text(stub)
        SessionStore(tmp_path).load(session.id)
    kept = {p.read_text() for p in _aside(store, f"{session.id}.json")}
    assert kept == {'{"id": "first', '{"id": "second'}


def test_the_snapshot_after_a_recovery_is_newer_than_the_journal_it_replaced(tmp_path: Path) -> None:
    store, session = _saved_session(tmp_path, "one", compact_after=1)
    for _ in range(3):
        store.compact(session)  # generation 5
    store.close(session.id)
    old_generation = json.loads(store.journal_path(session.id).read_bytes().splitlines()[0])["generation"]
    store.snapshot_path(session.id).write_text('{"id": "x')
    SessionStore(tmp_path).load(session.id)
    assert json.loads(store.snapshot_path(session.id).read_text())["generation"] > old_generation


def test_reading_a_damaged_session_for_a_listing_moves_nothing(tmp_path: Path) -> None:
    store, session = _saved_session(tmp_path, "one", "two", compact_after=1)
    store.snapshot_path(session.id).write_text('{"id": "01a2')
    with pytest.raises(SessionUnreadable) as err:  # nothing recoverable: the journal starts past message 0
        SessionStore(tmp_path).read(session.id)
    assert f"({session.id}.json, {session.id}.journal in {store.dir})" in str(err.value)
    assert sorted(p.name for p in store.dir.iterdir() if "corrupt" in p.name) == []
