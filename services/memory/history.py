"""The history archive: messages that left a session's context, searchable by FTS5 (history_search).

It shares the note store's connection and lock (one SQLite file, one writer at a time).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

from services.memory.database import immediate
from services.memory.model import ArchivedMessage


class HistoryArchive:
    """The ``history`` and ``history_fts`` tables of one memory.db."""

    def __init__(self, db: sqlite3.Connection, lock: threading.RLock) -> None:
        self._db = db
        self._lock = lock

    def archive(self, messages: list[ArchivedMessage], terms: Callable[[str], str]) -> int:
        """Store messages that left the context; a message already archived is kept once."""
        added = 0
        with self._lock, immediate(self._db):
            for m in messages:
                cur = self._db.execute(
                    "INSERT OR IGNORE INTO history (session_id, idx, role, text) VALUES (?,?,?,?)",
                    (m.session_id, m.index, m.role, m.text),
                )
                if cur.rowcount:
                    self._db.execute(
                        "INSERT INTO history_fts (rowid, terms) VALUES (?, ?)", (cur.lastrowid, terms(m.text))
                    )
                    added += 1
        return added

    def search(self, match: str, session_id: str, k: int) -> list[ArchivedMessage]:
        """Archived messages matching an FTS5 ``match`` expression, best first."""
        if not match:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT h.session_id, h.idx, h.role, h.text FROM history_fts f JOIN history h ON h.id = f.rowid "
                "WHERE history_fts MATCH ? AND (? = '' OR h.session_id = ?) ORDER BY bm25(history_fts) LIMIT ?",
                (match, session_id, session_id, k),
            ).fetchall()
        return [ArchivedMessage(str(r[0]), int(r[1]), str(r[2]), str(r[3])) for r in rows]
