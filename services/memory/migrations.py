"""Schema versions of memory.db. Append a step; never edit a released one."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def _v1(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    db.execute("INSERT INTO meta (key, value) VALUES ('rev', 0)")
    db.execute(
        """CREATE TABLE notes (
            doc INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            text TEXT NOT NULL,
            kind TEXT NOT NULL,
            importance INTEGER NOT NULL,
            pinned INTEGER NOT NULL,
            scene TEXT NOT NULL,
            evidence TEXT NOT NULL,
            scope TEXT NOT NULL,
            source_message_ids TEXT NOT NULL,
            hits INTEGER NOT NULL,
            last_used REAL NOT NULL,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            rev INTEGER NOT NULL
        )"""
    )
    db.execute("CREATE INDEX notes_rev ON notes(rev)")
    db.execute("CREATE TABLE tombstones (doc INTEGER NOT NULL, rev INTEGER NOT NULL)")
    db.execute("CREATE INDEX tombstones_rev ON tombstones(rev)")


def _v2(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE history (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            idx INTEGER NOT NULL,
            role TEXT NOT NULL,
            text TEXT NOT NULL,
            UNIQUE (session_id, idx)
        )"""
    )
    # Pre-tokenized terms (CJK bigrams joined by spaces), so FTS5's default tokenizer sees our terms.
    db.execute("CREATE VIRTUAL TABLE history_fts USING fts5(terms)")


NOTE_TERMS_TABLE = """CREATE TABLE IF NOT EXISTS note_terms (
    doc INTEGER PRIMARY KEY,
    version INTEGER NOT NULL,
    checksum INTEGER NOT NULL,
    terms TEXT NOT NULL
)"""
"""Each note's tokens (see persisted.py); a store re-creates it when opened if someone dropped it."""


def _v3(db: sqlite3.Connection) -> None:
    # Left empty: the first open finds every note's terms missing, tokenizes once and fills the table.
    db.execute(NOTE_TERMS_TABLE)


def _v4(db: sqlite3.Connection) -> None:
    # Scenes are stored as keys from v4 on; a note whose stored label an older version wrote
    # (translated, or another spelling) is rewritten to its key when a store opens, and the label
    # it had is kept here (nothing is lost, and a rewrite can be undone).
    db.execute(
        """CREATE TABLE scene_renames (
            doc INTEGER NOT NULL,
            note_id TEXT NOT NULL,
            before TEXT NOT NULL,
            after TEXT NOT NULL,
            at REAL NOT NULL
        )"""
    )


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_v1, _v2, _v3, _v4]
"""MIGRATIONS[i] takes the schema from version i to i + 1."""

LATEST = len(MIGRATIONS)


def migrate(db: sqlite3.Connection) -> int:
    """Bring ``db`` to the latest version inside one IMMEDIATE transaction; returns the version."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = db.execute("SELECT version FROM schema_version").fetchone()
        version = int(row[0]) if row else 0
        if row is None:
            db.execute("INSERT INTO schema_version (version) VALUES (0)")
        if version > LATEST:
            raise RuntimeError(f"memory.db has schema version {version}, newer than this build ({LATEST})")
        for step in MIGRATIONS[version:]:
            step(db)
        db.execute("UPDATE schema_version SET version = ?", (LATEST,))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return LATEST
