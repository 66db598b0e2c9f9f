"""Persisted note terms: a reopened store ranks exactly like a fresh tokenizing build; old or damaged terms are rebuilt.

Every store here is a real SQLite file; damage is done with sqlite3 directly, the
way a crash, a hand edit or an older build would leave it.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from services.memory.index import InvertedIndex
from services.memory.migrations import LATEST, MIGRATIONS
from services.memory.model import Note, RecallQuery
from services.memory.persisted import checksum, terms_row, trusted_terms
from services.memory.ranking import rank, set_note_attrs
from services.memory.settings import MemorySettings
from services.memory.store import Changes, MemoryStore
from services.memory.tokenizer import TOKENIZER_VERSION, tokenize

CORPUS = Path(__file__).resolve().parents[2] / "data" / "memory" / "corpus.json"
NOW = 1_800_000_000.0
REBUILT = "no usable persisted terms"
Ranked = list[list[tuple[str, float, float]]]


def corpus() -> tuple[list[Note], list[str]]:
    data = json.loads(CORPUS.read_text(encoding="utf-8"))
    notes = [
        Note(
            id=n["id"], text=n["text"], kind=n["kind"], importance=n["importance"],
            created=NOW - n["age_days"] * 86_400.0, updated=NOW - n["age_days"] * 86_400.0,
        )
        for n in data["notes"]
    ]
    return notes, [str(q["query"]) for q in data["queries"]]


def rankings(index: InvertedIndex, notes: dict[int, Note], queries: list[str]) -> Ranked:
    """Every query's hits (id, score, relevance), unfiltered and kind-filtered, through the production ranking."""
    out: Ranked = []
    for q in queries:
        for kind in ("", "decision"):
            query = RecallQuery(query=q, k=5, kind=kind)
            got = rank(index, notes, tokenize(q), query, MemorySettings(), NOW)
            out.append([(h.note.id, h.score, h.relevance) for h in got.hits])
    return out


def fresh_build(notes: dict[int, Note]) -> InvertedIndex:
    """The index as opening a store built it before terms were persisted: tokenize and add note by note."""
    index = InvertedIndex()
    for doc, note in notes.items():
        index.add(doc, tokenize(note.text))
        set_note_attrs(index, doc, note)
    return index


def terms_rows(db: Path) -> dict[int, tuple[object, object, object]]:
    conn = sqlite3.connect(str(db))
    rows = {int(r[0]): (r[1], r[2], r[3]) for r in conn.execute("SELECT doc, version, checksum, terms FROM note_terms")}
    conn.close()
    return rows


def all_rows_trusted(db: Path) -> bool:
    conn = sqlite3.connect(str(db))
    rows = conn.execute("SELECT n.text, t.version, t.checksum, t.terms FROM notes n LEFT JOIN note_terms t USING (doc)")
    ok = all(trusted_terms(str(r[0]), r[1], r[2], r[3]) == tokenize(str(r[0])) for r in rows)
    conn.close()
    return ok


def sql(db: Path, *statements: str) -> None:
    conn = sqlite3.connect(str(db), isolation_level=None)
    for statement in statements:
        conn.execute(statement)
    conn.close()


@pytest.fixture
def corpus_db(short_dir: Path) -> tuple[Path, list[str]]:
    notes, queries = corpus()
    db = short_dir / "memory.db"
    store = MemoryStore(db)
    store.insert_many(notes)
    store.close()
    return db, queries


def test_persisted_terms_are_trusted_only_when_version_text_and_terms_agree() -> None:
    text = "Builds use uv 构建缓存放在 ~/.cache"
    version, check, joined = terms_row(text, tokenize(text))
    assert trusted_terms(text, version, check, joined) == tokenize(text)
    assert trusted_terms(text, version + 1, checksum(version + 1, text, joined), joined) is None
    assert trusted_terms(text + "!", version, check, joined) is None  # text edited behind the store's back
    assert trusted_terms(text, version, check, joined.replace("uv", "pip")) is None  # terms garbled
    assert trusted_terms(text, None, None, None) is None  # no row
    assert trusted_terms(text, version, str(check), joined) is None
    assert trusted_terms("?!", *terms_row("?!", [])) == []


def test_a_reopened_store_ranks_every_query_exactly_like_a_fresh_tokenizing_build(
    corpus_db: tuple[Path, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    db, queries = corpus_db
    with caplog.at_level(logging.WARNING, logger="ai_coding.memory"):
        store = MemoryStore(db)
    assert REBUILT not in caplog.text
    assert len(store.notes) == 60
    reference = fresh_build(store.notes)
    assert all(store.index.posting(t) == reference.posting(t) for n in store.notes.values() for t in tokenize(n.text))
    assert store.index.doc_len == reference.doc_len and store.index.total_len == reference.total_len
    assert rankings(store.index, store.notes, queries) == rankings(reference, store.notes, queries)
    assert any(rankings(store.index, store.notes, queries))
    store.close()


def test_writes_keep_the_persisted_terms_current_so_a_reopen_needs_no_rebuild(
    corpus_db: tuple[Path, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    db, queries = corpus_db
    store = MemoryStore(db)
    first, second = store.get("n01"), store.get("n02")
    assert first is not None and second is not None
    store.write(lambda _s: (Changes(updates=[replace(first, text="The backend is a Litestar service in src/api")],
                                    deletes=["n02"], inserts=[Note(id="new", text="发布走 GitHub Actions 流水线")]), None))
    store.touch(["n03"], now=NOW)
    live = rankings(store.index, store.notes, [*queries, "litestar", "流水线"])
    store.close()
    with caplog.at_level(logging.WARNING, logger="ai_coding.memory"):
        reopened = MemoryStore(db)
    assert REBUILT not in caplog.text
    assert all_rows_trusted(db)
    assert rankings(reopened.index, reopened.notes, [*queries, "litestar", "流水线"]) == live
    assert [h.note.id for h in rank(reopened.index, reopened.notes, ["litestar"], RecallQuery("litestar"),
                                    MemorySettings(), NOW).hits] == ["n01"]
    assert reopened.get("n02") is None and set(terms_rows(db)) == set(reopened.notes)
    reopened.close()


def test_a_store_of_the_previous_schema_opens_migrates_and_saves_the_terms_once(
    short_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    notes, queries = corpus()
    db = short_dir / "memory.db"
    conn = sqlite3.connect(str(db), isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (2)")
    MIGRATIONS[0](conn)
    MIGRATIONS[1](conn)
    for note in notes:  # the columns the version-2 store wrote
        conn.execute(
            "INSERT INTO notes (id, text, kind, importance, pinned, scene, evidence, scope, source_message_ids, hits, "
            "last_used, created, updated, rev) VALUES (?, ?, ?, ?, 0, '', '', 'workspace', '[]', 0, 0, ?, ?, 1)",
            (note.id, note.text, note.kind, note.importance, note.created, note.updated),
        )
    conn.execute("UPDATE meta SET value = 1 WHERE key = 'rev'")
    conn.close()

    with caplog.at_level(logging.WARNING, logger="ai_coding.memory"):
        store = MemoryStore(db)
    assert "60 note(s)" in caplog.text and REBUILT in caplog.text
    assert rankings(store.index, store.notes, queries) == rankings(fresh_build(store.notes), store.notes, queries)
    assert sorted(n.id for n in store.all_notes()) == sorted(n.id for n in notes)
    store.close()
    assert all_rows_trusted(db) and len(terms_rows(db)) == 60
    conn = sqlite3.connect(str(db))
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(LATEST,)]
    conn.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ai_coding.memory"):
        MemoryStore(db).close()
    assert REBUILT not in caplog.text


def test_deleted_garbled_stale_or_mismatched_terms_are_detected_and_rebuilt_from_the_notes(
    corpus_db: tuple[Path, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    db, queries = corpus_db
    conn = sqlite3.connect(str(db))
    doc_of = {str(r[1]): int(r[0]) for r in conn.execute("SELECT doc, id FROM notes")}
    conn.close()
    sql(
        db,
        f"DELETE FROM note_terms WHERE doc IN ({doc_of['n01']}, {doc_of['n02']})",
        f"UPDATE note_terms SET terms = 'fastapi fastapi fastapi' WHERE doc = {doc_of['n03']}",
        f"UPDATE note_terms SET version = {TOKENIZER_VERSION + 7} WHERE doc = {doc_of['n04']}",
        f"UPDATE note_terms SET checksum = 'garbage' WHERE doc = {doc_of['n05']}",
        # A note edited by hand: its old terms no longer describe it.
        f"UPDATE notes SET text = 'Deploys go through the Nomad cluster' WHERE doc = {doc_of['n06']}",
        "INSERT INTO note_terms (doc, version, checksum, terms) VALUES (99999, 1, 0, 'orphan')",
    )
    with caplog.at_level(logging.WARNING, logger="ai_coding.memory"):
        store = MemoryStore(db)
    assert "6 note(s)" in caplog.text
    assert rankings(store.index, store.notes, [*queries, "nomad"]) == rankings(
        fresh_build(store.notes), store.notes, [*queries, "nomad"]
    )
    hits = rank(store.index, store.notes, ["nomad"], RecallQuery("nomad"), MemorySettings(), NOW).hits
    assert [h.note.id for h in hits] == ["n06"]
    store.close()
    assert all_rows_trusted(db)
    assert set(terms_rows(db)) == set(doc_of.values())  # the orphan row is gone too


def test_a_dropped_terms_table_is_recreated_and_refilled(
    corpus_db: tuple[Path, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    db, queries = corpus_db
    sql(db, "DROP TABLE note_terms")
    with caplog.at_level(logging.WARNING, logger="ai_coding.memory"):
        store = MemoryStore(db)
    assert "60 note(s)" in caplog.text
    assert rankings(store.index, store.notes, queries) == rankings(fresh_build(store.notes), store.notes, queries)
    store.close()
    assert all_rows_trusted(db) and len(terms_rows(db)) == 60


def test_a_second_process_sees_new_notes_through_their_persisted_terms(corpus_db: tuple[Path, list[str]]) -> None:
    db, queries = corpus_db
    reader, writer = MemoryStore(db), MemoryStore(db)
    writer.insert_many([Note(id="late", text="Releases are signed with cosign keyless")])
    reader.refresh()
    assert reader.get("late") is not None
    assert rankings(reader.index, reader.notes, [*queries, "cosign"]) == rankings(
        fresh_build(reader.notes), reader.notes, [*queries, "cosign"]
    )
    reader.close()
    writer.close()
