"""The SQLite note store: WAL, one IMMEDIATE transaction per write, an in-memory index.

Safe for several threads (one connection behind a lock) and several processes
(SQLite's write lock via ``BEGIN IMMEDIATE`` plus a busy timeout). Every write
bumps a revision counter in ``meta``; a store catches up with what other
processes wrote by reading only the rows (and tombstones) newer than the
revision it last saw, so its inverted index stays current without rescanning.
Inside a write transaction the store first catches up, so a reconcile decision
always sees every committed note. Each note's terms are written beside it in the
same transaction (table ``note_terms``, see persisted.py), so opening a store
loads the index without tokenizing; terms that are missing, stale or garbled are
rebuilt from the note text at open, with a warning, and written back.
"""

from __future__ import annotations

import itertools
import logging
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from services.kernel.statedir import STATE_DIR
from services.memory.database import gc_paused, immediate, open_database
from services.memory.errors import StoreUnavailable
from services.memory.history import HistoryArchive
from services.memory.model import Note
from services.memory.note_rows import (
    CHANGED_ROWS,
    COLUMNS,
    NOTE_FIELDS,
    SAVE_TERMS,
    SCENE_COLUMN,
    healthy_note,
    note_params,
)
from services.memory.persisted import terms_row, trusted_terms
from services.memory.similarity import dedupe_key
from services.memory.tokenizer import tokenize

if TYPE_CHECKING:
    from services.memory.index import InvertedIndex

T = TypeVar("T")
log = logging.getLogger("ai_coding.memory")

# A note at >= 0.80 similarity shares most of its rarest terms, so probing with the rarest few keeps
# a write's near-duplicate search off the long posting lists of common words.
SIMILAR_PROBE_TERMS = 6
SIMILAR_PROBE_POSTINGS = 256
DB_DIR = STATE_DIR
DB_NAME = "memory.db"


def db_path(workspace: Path) -> Path:
    """Where the store of ``workspace`` lives."""
    return workspace / DB_DIR / DB_NAME


@dataclass
class Changes:
    """What one write transaction does; filled by a decision function, applied by the store."""

    inserts: list[Note] = field(default_factory=list)
    updates: list[Note] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    meta: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.inserts or self.updates or self.deletes or self.meta)


class MemoryStore:
    """One workspace's notes in SQLite plus the in-memory inverted index over them."""

    def __init__(self, path: Path, *, busy_timeout_ms: int = 10_000) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._db = open_database(path, busy_timeout_ms)
        self.history = HistoryArchive(self._db, self._lock)
        """Messages that left a session's context (same file and lock)."""
        self._index: InvertedIndex | None = None
        """Built on first use (a recall or a similar-note check): numpy loads then, not when the first
        turn's constraints open the store. Until then ``_pending`` holds each doc's terms."""
        self._pending: dict[int, list[str] | None] = {}
        """Terms of the docs the index does not hold yet (None: tokenize the note's text when it is built)."""
        self.notes: dict[int, Note] = {}
        self._doc_of: dict[str, int] = {}
        self._doc_of_key: dict[str, int] | None = None
        """Built on first use (writes only): recall never needs it, so opening does not pay for it."""
        self._untrusted: dict[int, tuple[str, list[str]]] = {}
        """Docs loaded at open whose persisted terms were not usable: (text, terms tokenized from it)."""
        self._relabelled: dict[int, tuple[str, str, str]] = {}
        """Docs loaded at open whose stored scene is not its key: (note id, stored label, key)."""
        self.kind_counts: Counter[str] = Counter()
        self.scene_counts: Counter[str] = Counter()
        self.scene_heat: Counter[str] = Counter()
        self._rev = 0
        self._data_version = -1
        with self._lock, gc_paused():
            self._read_txn(self._catch_up)
            if self._untrusted:
                self._save_rebuilt_terms(self._untrusted)
            if self._relabelled:
                self._save_scene_keys(self._relabelled)
            self._untrusted, self._relabelled = {}, {}

    @property
    def index(self) -> InvertedIndex:
        """The inverted index over ``notes``, built on first use from the terms held until then."""
        with self._lock:
            if self._index is None:
                from services.memory.index import InvertedIndex
                from services.memory.ranking import set_note_attrs_many

                index = InvertedIndex()
                docs = list(self._pending)
                index.add_many(docs, [tokenize(self.notes[d].text) if t is None else t
                                      for d, t in self._pending.items()])
                set_note_attrs_many(index, docs, [self.notes[d] for d in docs])
                self._index, self._pending = index, {}
            return self._index

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the connection (the store must not be used afterwards)."""
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------ sync

    def _read_txn(self, fn: Callable[[], None]) -> None:
        self._db.execute("BEGIN")
        try:
            fn()
        finally:
            self._db.execute("COMMIT")

    def _catch_up(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'rev'").fetchone()
        latest = int(row[0])
        if latest != self._rev:
            self._untrusted, self._relabelled = {}, {}  # only the constructor writes these back
            changed = [self._read_row(r) for r in self._db.execute(CHANGED_ROWS, (self._rev,)).fetchall()]
            if not self.notes:
                self._load([(doc, note, terms) for doc, note, terms in changed if note is not None])
            else:
                for doc, note, terms in changed:
                    if note is None:
                        self._forget_doc(doc)  # a row edited into junk leaves the index
                    else:
                        self._apply_row(doc, note, terms)
            for (doc,) in self._db.execute("SELECT doc FROM tombstones WHERE rev > ?", (self._rev,)):
                self._forget_doc(int(doc))
            self._rev = latest
        self._data_version = int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def _read_row(self, row: tuple[object, ...]) -> tuple[int, Note | None, list[str] | None]:
        """(doc, note or None when the row is unusable, its persisted terms or None when they are not
        usable); a stored scene that folds to another key is noted for the constructor's write-back."""
        doc = int(row[0])  # type: ignore[call-overload]
        note = healthy_note(row[1 : 1 + NOTE_FIELDS])
        if note is None:
            return doc, None, None
        stored = row[1 + SCENE_COLUMN]
        if stored != note.scene and isinstance(stored, str):
            self._relabelled[doc] = (note.id, stored, note.scene)
        return doc, note, trusted_terms(note.text, *row[1 + NOTE_FIELDS :])

    def _load(self, rows: list[tuple[int, Note, list[str] | None]]) -> None:
        """Fill an empty index with ``rows`` in bulk: the same state as :meth:`_apply_row` on each, faster.

        Notes without usable persisted terms are tokenized and remembered in ``_untrusted`` for write-back.
        """
        docs = [doc for doc, _, _ in rows]
        notes = [note for _, note, _ in rows]
        term_lists: list[list[str]] = []
        for doc, note, terms in rows:
            if terms is None:
                terms = tokenize(note.text)
                self._untrusted[doc] = (note.text, terms)
            term_lists.append(terms)
        if self._index is None:
            self._pending.update(zip(docs, term_lists, strict=True))
        else:
            from services.memory.ranking import set_note_attrs_many
            self._index.add_many(docs, term_lists)
            set_note_attrs_many(self._index, docs, notes)
        self.notes.update(zip(docs, notes, strict=True))
        self._doc_of.update((note.id, doc) for doc, note in zip(docs, notes, strict=True))
        self._doc_of_key = None  # rebuilt on its next use
        self.kind_counts.update(note.kind for note in notes)
        self.scene_counts.update(note.scene for note in notes if note.scene)
        for note in notes:
            if note.scene:
                self.scene_heat[note.scene] += note.hits

    def _save_rebuilt_terms(self, rebuilt: dict[int, tuple[str, list[str]]]) -> None:
        """Write back terms tokenized at open, so the next open loads them; a failure only costs speed."""
        log.warning(
            "memory: %d note(s) in %s had no usable persisted terms (missing, from another tokenizer version, "
            "or not matching the note); tokenized them again from the notes and saved the terms",
            len(rebuilt), self.path,
        )
        params = []
        for doc, (text, terms) in rebuilt.items():
            version, check, joined = terms_row(text, terms)
            params.append((doc, version, check, joined))
        try:
            with immediate(self._db):
                self._db.executemany(SAVE_TERMS, params)
                self._db.execute("DELETE FROM note_terms WHERE doc NOT IN (SELECT doc FROM notes)")
        except sqlite3.Error as exc:
            log.warning("memory: could not save rebuilt terms in %s (%s); the next open rebuilds them", self.path, exc)

    def _save_scene_keys(self, relabelled: dict[int, tuple[str, str, str]]) -> None:
        """Store each note's scene key in place of the label an older version wrote (the label goes to
        ``scene_renames``); a failure only costs the fold on every open, which reads them right anyway."""
        log.warning("memory: %d note(s) in %s had scene labels of an older version; stored their keys "
                    "(the labels are kept in table scene_renames)", len(relabelled), self.path)
        now = time.time()
        try:
            with immediate(self._db):
                for doc, (note_id, before, after) in relabelled.items():
                    cur = self._db.execute("UPDATE notes SET scene = ? WHERE doc = ? AND scene = ?", (after, doc, before))
                    if cur.rowcount:
                        self._db.execute("INSERT INTO scene_renames (doc, note_id, before, after, at) "
                                         "VALUES (?, ?, ?, ?, ?)", (doc, note_id, before, after, now))
        except sqlite3.Error as exc:
            log.warning("memory: could not store scene keys in %s (%s); they are folded on every open", self.path, exc)

    def _apply_row(self, doc: int, note: Note, terms: list[str] | None) -> None:
        old = self.notes.get(doc)
        if self._index is None:
            if old is None or old.text != note.text:
                self._pending[doc] = terms
        else:
            from services.memory.ranking import set_note_attrs
            if old is None or old.text != note.text:
                self._index.add(doc, tokenize(note.text) if terms is None else terms)
            set_note_attrs(self._index, doc, note)
        if old is not None:
            self._count(old, -1)
        self._count(note, +1)
        self.notes[doc] = note
        self._doc_of[note.id] = doc
        if self._doc_of_key is not None:
            if old is not None and self._doc_of_key.get(dedupe_key(old.text)) == doc:
                del self._doc_of_key[dedupe_key(old.text)]
            self._doc_of_key[dedupe_key(note.text)] = doc

    def _forget_doc(self, doc: int) -> None:
        note = self.notes.pop(doc, None)
        if note is None:
            return
        if self._index is None:
            self._pending.pop(doc, None)
        else:
            self._index.remove(doc)
        self._count(note, -1)
        self._doc_of.pop(note.id, None)
        if self._doc_of_key is not None and self._doc_of_key.get(dedupe_key(note.text)) == doc:
            del self._doc_of_key[dedupe_key(note.text)]

    def _count(self, note: Note, sign: int) -> None:
        self.kind_counts[note.kind] += sign
        if note.scene:
            self.scene_counts[note.scene] += sign
            self.scene_heat[note.scene] += sign * note.hits

    def newest(self, n: int) -> list[Note]:
        """The ``n`` most recently inserted notes, newest first (no scan)."""
        return list(itertools.islice((self.notes[d] for d in reversed(self.notes)), n))

    def refresh(self) -> None:
        """Catch up with writes other connections committed (cheap when there are none)."""
        with self._lock:
            if self._db.in_transaction:
                return  # inside write(): already caught up under the write lock
            version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
            if version != self._data_version:
                self._read_txn(self._catch_up)

    @contextmanager
    def reading(self) -> Iterator[MemoryStore]:
        """Hold the store still (no writes from this process) while ranking; caught up first."""
        with self._lock:
            self.refresh()
            yield self

    # ------------------------------------------------------------ lookups (caller holds the lock)

    def get(self, note_id: str) -> Note | None:
        """The note with ``note_id`` (as of the last catch-up), or None."""
        doc = self._doc_of.get(note_id)
        return None if doc is None else self.notes[doc]

    def doc_of(self, note_id: str) -> int | None:
        """The internal document number of ``note_id``."""
        return self._doc_of.get(note_id)

    def by_dedupe_key(self, key: str) -> Note | None:
        """The note whose normalized text equals ``key``."""
        if self._doc_of_key is None:
            self._doc_of_key = {dedupe_key(n.text): d for d, n in self.notes.items()}
        doc = self._doc_of_key.get(key)
        return None if doc is None else self.notes[doc]

    def similar(self, text: str, kind: str, scene: str, limit: int = 5) -> list[Note]:
        """Up to ``limit`` notes of the same kind and scene sharing the most weight with ``text``."""
        known = sorted((t for t in set(tokenize(text)) if self.index.df(t)), key=lambda t: (self.index.df(t), t))
        terms: list[str] = []
        visited = 0
        for term in known[:SIMILAR_PROBE_TERMS]:
            if terms and visited + self.index.df(term) > SIMILAR_PROBE_POSTINGS:
                break
            terms.append(term)
            visited += self.index.df(term)
        scores, _ = self.index.score(
            terms, lambda d: self.notes[d].kind == kind and self.notes[d].scene == scene
        )
        best = sorted(scores, key=lambda d: (-scores[d], d))[:limit]
        return [self.notes[d] for d in best]

    def all_notes(self) -> list[Note]:
        """Every note, oldest first (a copy of the list; notes are shared)."""
        with self._lock:
            self.refresh()
            return [self.notes[d] for d in sorted(self.notes)]

    def count(self) -> int:
        """How many notes the store holds."""
        with self._lock:
            self.refresh()
            return len(self.notes)

    # ------------------------------------------------------------ writes

    def write(self, decide: Callable[[MemoryStore], tuple[Changes, T]]) -> T:
        """Run ``decide`` on an up-to-date view inside one IMMEDIATE transaction and apply its changes."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreUnavailable(
                    f"the memory store {self.path} stayed locked: {exc}",
                    hint="Another process holds the write lock; retry, or raise memory.busy_timeout_ms.",
                ) from None
            try:
                self._catch_up()
                changes, result = decide(self)
                if changes:
                    self._apply_changes(changes)
                self._db.execute("COMMIT")
            except BaseException:
                # The index only ever holds committed rows, so a rollback leaves nothing to undo.
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            if changes:
                self._read_txn(self._catch_up)
            return result

    def _apply_changes(self, changes: Changes) -> None:
        rev = int(self._db.execute("SELECT value FROM meta WHERE key = 'rev'").fetchone()[0]) + 1
        self._db.execute("UPDATE meta SET value = ? WHERE key = 'rev'", (rev,))
        for note in changes.inserts:
            cur = self._db.execute(
                f"INSERT INTO notes ({COLUMNS}, rev) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (*note_params(note), rev),
            )
            self._db.execute(SAVE_TERMS, (cur.lastrowid, *terms_row(note.text, tokenize(note.text))))
        for note in changes.updates:
            old = self.get(note.id)
            self._db.execute(
                "UPDATE notes SET text=?, kind=?, importance=?, pinned=?, scene=?, evidence=?, scope=?, "
                "source_message_ids=?, hits=?, last_used=?, created=?, updated=?, rev=? WHERE id=?",
                (*note_params(note)[1:], rev, note.id),
            )
            if old is None or old.text != note.text:  # a use count (touch) leaves the terms as they are
                self._db.execute(
                    "INSERT OR REPLACE INTO note_terms (doc, version, checksum, terms) "
                    "SELECT doc, ?, ?, ? FROM notes WHERE id = ?",
                    (*terms_row(note.text, tokenize(note.text)), note.id),
                )
        for key, value in changes.meta.items():
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
        for note_id in changes.deletes:
            row = self._db.execute("SELECT doc FROM notes WHERE id = ?", (note_id,)).fetchone()
            if row is not None:
                self._db.execute("DELETE FROM notes WHERE doc = ?", (row[0],))
                self._db.execute("DELETE FROM note_terms WHERE doc = ?", (row[0],))
                self._db.execute("INSERT INTO tombstones (doc, rev) VALUES (?, ?)", (row[0], rev))

    def insert_many(self, notes: Iterable[Note]) -> int:
        """Insert notes as given in one transaction (imports and benchmarks; no reconcile)."""
        batch = list(notes)
        self.write(lambda _s: (Changes(inserts=batch), None))
        return len(batch)

    def touch(self, note_ids: list[str], now: float | None = None) -> None:
        """Count one use of each note the model actually saw (hits + 1, last_used = now)."""
        if not note_ids:
            return
        stamp = time.time() if now is None else now

        def decide(store: MemoryStore) -> tuple[Changes, None]:
            changes = Changes()
            for note_id in dict.fromkeys(note_ids):
                note = store.get(note_id)
                if note is not None:
                    changes.updates.append(replace(note, hits=note.hits + 1, last_used=stamp))
            return changes, None

        self.write(decide)

    # ------------------------------------------------------------ meta

    def meta_flag(self, key: str) -> int:
        """A counter/flag stored in ``meta`` (0 when unset)."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            return int(row[0]) if row else 0
