"""Schema migrations keep notes and never run twice."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from services.memory.migrations import LATEST, MIGRATIONS
from services.memory.store import MemoryStore


def test_a_version_1_database_is_migrated_without_losing_notes(short_dir: Path) -> None:
    db = short_dir / "memory.db"
    conn = sqlite3.connect(str(db), isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (1)")
    MIGRATIONS[0](conn)
    conn.execute(
        "INSERT INTO notes (id, text, kind, importance, pinned, scene, evidence, scope, source_message_ids, hits, "
        "last_used, created, updated, rev) VALUES ('n1', 'Builds use uv', 'decision', 4, 1, '', '', 'workspace', "
        "'[]', 2, 0, 1, 1, 1)"
    )
    conn.execute("UPDATE meta SET value = 1 WHERE key = 'rev'")
    conn.close()
    store = MemoryStore(db)
    assert [(n.id, n.text, n.pinned, n.hits) for n in store.all_notes()] == [("n1", "Builds use uv", True, 2)]
    store.close()
    store = MemoryStore(db)  # reopening runs nothing again
    store.close()
    conn = sqlite3.connect(str(db))
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(LATEST,)]
    assert conn.execute("SELECT count(*) FROM history").fetchone() == (0,)
    conn.close()


def test_malformed_or_junk_rows_on_disk_are_skipped_at_load_and_kept(short_dir: Path) -> None:
    db = short_dir / "memory.db"
    MemoryStore(db).close()
    conn = sqlite3.connect(str(db), isolation_level=None)
    columns = ("INSERT INTO notes (id, text, kind, importance, pinned, scene, evidence, scope, source_message_ids, "
               "hits, last_used, created, updated, rev) VALUES (?, ?, 'fact', 3, 0, '', '', 'workspace', ?, 0, 0, 1, 1, 1)")
    conn.execute(columns, ("good", "Builds use uv", "[]"))
    conn.execute(columns, ("frag", '[{"text": "CI 跑在', "[]"))
    conn.execute(columns, ("bad", "Tests use pytest", "{not json"))
    conn.execute("UPDATE meta SET value = 1 WHERE key = 'rev'")
    conn.close()
    store = MemoryStore(db)
    assert [n.id for n in store.all_notes()] == ["good"]
    store.close()
    conn = sqlite3.connect(str(db))
    assert conn.execute("SELECT count(*) FROM notes").fetchone() == (3,)
    conn.close()
