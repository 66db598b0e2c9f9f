"""MemoryEngine: the memory service's domain API (no gRPC here; servicer.py adapts it).

One store per workspace, opened on first use. Writes go through
:func:`reconcile.decide` inside one store transaction each; recall ranks under
the store lock, then counts a use only for the notes it returned.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from services.kernel.config import LiveSection
from services.kernel.ids import new_id
from services.memory.embeddings import Embedder, SemanticLayer
from services.memory.errors import InvalidRequest, NoteNotFound, StoreUnavailable
from services.memory.gates import clean_query_for_recall, write_rejection
from services.memory.model import (
    Action,
    ArchivedMessage,
    Candidate,
    ConsolidateReport,
    Hit,
    Note,
    Outcome,
    RecallQuery,
    RecallResult,
)
from services.memory.recall import diagnostics, index_summary, render
from services.memory.reconcile import Clock, decide
from services.memory.scenes import fold_scene
from services.memory.settings import MemorySettings, is_extraction_allowed, writes_allowed
from services.memory.similarity import dedupe_key
from services.memory.store import Changes, MemoryStore, db_path
from services.memory.tokenizer import tokenize

# The BM25 index, ranking and consolidation run on numpy (~150 ms to import on 2 cores, ~18 MB
# resident): they load at a service's first recall or similar-note check (MemoryStore.index), not
# at start nor when the first turn's constraints open a store, so an idle service never holds them.

log = logging.getLogger("ai_coding.memory")

LEGACY_FILE = ".memory"
LEGACY_BACKUP = "memory-legacy.json.bak"
CONSTRAINT_DECISIONS = 5


class MemoryEngine:
    """Notes, recall, constraints, consolidate and the history archive for any number of workspaces."""

    def __init__(self, settings: MemorySettings | LiveSection[MemorySettings], embedder: Embedder | None = None) -> None:
        self._live = settings if isinstance(settings, LiveSection) else None
        self._settings = settings.get() if isinstance(settings, LiveSection) else settings
        self._stores: dict[Path, MemoryStore] = {}
        self._lock = threading.Lock()
        self._embedder = embedder
        self._semantic = SemanticLayer(self._settings.embeddings, embedder)

    @property
    def settings(self) -> MemorySettings:
        """The ``memory`` section as the user's config file holds it now (followed without a restart;
        a changed ``embeddings`` subsection starts a new semantic layer)."""
        if self._live is not None:
            fresh = self._live.get()
            if fresh is not self._settings:
                if fresh.embeddings != self._settings.embeddings:
                    self._semantic = SemanticLayer(fresh.embeddings, self._embedder)
                self._settings = fresh
        return self._settings

    # ------------------------------------------------------------ stores

    def store(self, workspace: str) -> MemoryStore:
        """The store of ``workspace`` (an absolute path to an existing directory)."""
        if not workspace:
            raise InvalidRequest("no workspace given", hint="Send the absolute workspace root.")
        root = Path(workspace)
        if not root.is_absolute() or not root.is_dir():
            raise InvalidRequest(
                f"workspace {workspace!r} is not an absolute path to a directory",
                hint="Send the absolute workspace root.",
            )
        with self._lock:
            got = self._stores.get(root)
            if got is None:
                got = MemoryStore(db_path(root), busy_timeout_ms=self.settings.busy_timeout_ms)
                import_legacy(got, root)
                self._stores[root] = got
            return got

    def close(self) -> None:
        """Close every open store."""
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()

    # ------------------------------------------------------------ writes

    def write_note(self, workspace: str, candidate: Candidate, extractor: str = "memory_write") -> Outcome:
        """Write one note through reconcile (gates, dedupe, near-duplicate folding).

        A note the model writes itself with memory_write carries evidence "model" unless the caller says otherwise.
        """
        if extractor == "memory_write" and not candidate.evidence:
            candidate = replace(candidate, evidence="model")
        return self.reconcile(workspace, [candidate], extractor)[0]

    def reconcile(self, workspace: str, candidates: list[Candidate], extractor: str = "harvest") -> list[Outcome]:
        """Reconcile each candidate in its own transaction."""
        if not is_extraction_allowed(self.settings, extractor):
            return [Outcome(Action.NOOP, None, "extraction_disabled") for _ in candidates]
        store = self.store(workspace)
        outcomes: list[Outcome] = []
        for candidate in candidates:
            outcomes.append(store.write(_decider(candidate)))
        return outcomes

    def pin(self, workspace: str, note_id: str, pinned: bool) -> Note:
        """Pin or unpin a note (a user action: allowed even in read-only memory mode)."""
        def change(store: MemoryStore) -> tuple[Changes, Note]:
            note = _require(store, note_id)
            updated = replace(note, pinned=pinned, updated=time.time())
            return Changes(updates=[updated]), updated

        return self.store(workspace).write(change)

    def forget(self, workspace: str, note_id: str) -> bool:
        """Delete a note; False when no note has that id."""
        def change(store: MemoryStore) -> tuple[Changes, bool]:
            try:
                note = _require(store, note_id)  # an id prefix will do, as for show and pin
            except NoteNotFound:
                return Changes(), False
            return Changes(deletes=[note.id]), True

        return self.store(workspace).write(change)

    def consolidate(self, workspace: str) -> ConsolidateReport:
        """Merge, promote, expire and evict in one transaction (nothing when writes are switched off)."""
        if not writes_allowed(self.settings):
            return ConsolidateReport()
        from services.memory import consolidate as consolidation

        settings = self.settings
        return self.store(workspace).write(
            lambda s: consolidation.plan(s.all_notes(), settings, time.time())
        )

    # ------------------------------------------------------------ reads

    def recall(self, workspace: str, query: RecallQuery, now: float | None = None) -> RecallResult:
        """Ranked notes for ``query`` with diagnostics; only returned notes count as used."""
        started = time.monotonic()
        if not self.settings.enabled:
            return RecallResult([], {"no_match": True, "disabled": True}, "Memory is switched off.")
        stamp = time.time() if now is None else now
        q = replace(query, k=query.k if query.k > 0 else self.settings.default_k, scene=fold_scene(query.scene))
        cleaned = clean_query_for_recall(q.query)
        terms = tokenize(cleaned)
        budget = q.timeout_seconds if q.timeout_seconds > 0 else self.settings.recall_timeout_seconds
        from services.memory import ranking

        store = self.store(workspace)
        with store.reading():
            cosines = None
            if self.settings.embeddings.enabled:
                eligible = {d: n for d, n in store.notes.items() if not ranking.failing_filter(n, q, stamp)}
                cosines = self._semantic.cosines(cleaned, eligible)
            ranked = ranking.rank(store.index, store.notes, terms, q, self.settings, stamp, cosines)
            filtered: dict[str, int] = {}
            summary = None
            if not ranked.hits and any((q.kind, q.evidence, q.scope, q.scene, q.since_days > 0)):
                filtered = ranking.filtered_out(store.index, terms, q, self.settings, stamp)
            elapsed = time.monotonic() - started
            if not ranked.hits:
                summary = index_summary(
                    len(store.notes), store.kind_counts, store.scene_counts, store.scene_heat, store.newest(3)
                )
        timed_out = budget > 0 and elapsed > budget
        hits = [Hit(r.note, round(r.score, 6), round(r.relevance, 6), r.matched) for r in ranked.hits]
        count_failed = False
        if hits and not timed_out and not q.skip_hit_count:
            try:
                store.touch([h.note.id for h in hits], stamp)
            except StoreUnavailable:
                # Hits are still returned: a lost use count must not starve the model of its notes.
                log.warning("recall could not count hits in %s", store.path)
                count_failed = True
        status = self._semantic.status if self.settings.embeddings.enabled else "off"
        diag = diagnostics(
            ranked, summary=summary, filtered=filtered, semantic_status=status, timed_out=timed_out,
            elapsed_ms=elapsed * 1000.0, include_near_misses=q.include_near_misses,
        )
        if count_failed:
            diag["hit_count_failed"] = True
        return RecallResult(hits, diag, render(cleaned or q.query, hits, diag))

    def constraints(self, workspace: str, max_chars: int = 0) -> str:
        """The <memory-constraints> block: pinned notes, then recent decisions; "" when empty."""
        if not self.settings.enabled:
            return ""
        budget = max_chars if max_chars > 0 else self.settings.constraints_max_chars
        notes = self.store(workspace).all_notes()
        return constraints_block(notes, budget)

    def list_notes(self, workspace: str, kind: str = "", limit: int = 0) -> list[Note]:
        """Notes, newest first, optionally of one kind."""
        notes = [n for n in self.store(workspace).all_notes() if not kind or n.kind == kind]
        notes.sort(key=lambda n: (-n.updated, n.id))
        return notes[:limit] if limit > 0 else notes

    def get(self, workspace: str, note_id: str) -> Note:
        """One note by id."""
        store = self.store(workspace)
        with store.reading():
            return _require(store, note_id)

    # ------------------------------------------------------------ history

    def archive(self, workspace: str, messages: list[ArchivedMessage]) -> int:
        """Keep messages that left the context for history_search."""
        return self.store(workspace).history.archive(messages, lambda text: " ".join(tokenize(text)))

    def search_history(self, workspace: str, query: str, session_id: str = "", k: int = 5) -> list[ArchivedMessage]:
        """Archived messages matching ``query``, best first."""
        terms = list(dict.fromkeys(tokenize(clean_query_for_recall(query))))
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        return self.store(workspace).history.search(match, session_id, k if k > 0 else 5)


def _decider(candidate: Candidate) -> Callable[[MemoryStore], tuple[Changes, Outcome]]:
    def run(store: MemoryStore) -> tuple[Changes, Outcome]:
        return decide(candidate, store, Clock(now=time.time(), new_id=lambda: new_id("n")))

    return run


MIN_PREFIX = 4
"""The shortest id prefix taken for a whole id (`memory show 01ab`); shorter ones match too much."""


def matching_ids(ids: Iterable[str], wanted: str) -> list[str]:
    """The ids ``wanted`` names: itself when it is one, else those it is a prefix of (4+ characters)."""
    known = list(ids)
    if wanted in known:
        return [wanted]
    return sorted(i for i in known if len(wanted) >= MIN_PREFIX and i.startswith(wanted))


def _require(store: MemoryStore, note_id: str) -> Note:
    found = matching_ids((n.id for n in store.notes.values()), note_id.strip())
    if len(found) > 1:
        raise InvalidRequest(f"id prefix {note_id!r} matches {len(found)} notes ({', '.join(found[:5])})",
                             hint="Pass more of the id.")
    note = store.get(found[0]) if found else None
    if note is None:
        raise NoteNotFound(f"no memory note has id {note_id!r}", hint="List notes with `ai-coding memory list`.")
    return note


def constraints_block(notes: list[Note], max_chars: int) -> str:
    """Pinned notes first, then the most recent decisions, whole lines only, within ``max_chars``."""
    pinned = sorted((n for n in notes if n.pinned), key=lambda n: (-n.updated, n.id))
    decisions = sorted((n for n in notes if n.kind == "decision" and not n.pinned), key=lambda n: (-n.updated, n.id))
    head, tail = "<memory-constraints>\n", "</memory-constraints>"
    lines: list[str] = []
    used = len(head) + len(tail)
    for note in [*pinned, *decisions[:CONSTRAINT_DECISIONS]]:
        line = f"- ({note.kind}) {note.text}\n"
        if used + len(line) > max_chars:
            continue
        lines.append(line)
        used += len(line)
    return head + "".join(lines) + tail if lines else ""


def _legacy_notes(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, dict):
        data = data.get("notes", [])
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


def _legacy_note(raw: dict[str, Any], now: float) -> Note | None:
    text = raw.get("text")
    if not isinstance(text, str) or write_rejection(text):
        return None

    def num(*keys: str) -> float:
        for key in keys:
            value = raw.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
        return 0.0

    sources = raw.get("source_message_ids")
    return Note(
        id=new_id("n"), text=" ".join(text.split()), kind=str(raw.get("kind") or "fact"),
        importance=min(max(int(num("importance") or 3), 1), 5), pinned=bool(raw.get("pinned", False)),
        scene=fold_scene(str(raw.get("scene") or "")), evidence=str(raw.get("evidence") or ""),
        scope=str(raw.get("scope") or "workspace"),
        source_message_ids=[str(s) for s in sources] if isinstance(sources, list) else [],
        hits=int(num("hits")), last_used=num("last_used", "last_used_time"),
        created=num("created", "created_time") or now, updated=num("updated", "updated_time") or now,
    )


def import_legacy(store: MemoryStore, workspace: Path) -> int:
    """Import the spec's JSON ``.memory`` file once (gated, deduplicated); a copy is kept as a backup."""
    source = workspace / LEGACY_FILE
    if not source.is_file() or store.meta_flag("legacy_imported"):
        return 0
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    now = time.time()
    backup = store.path.parent / LEGACY_BACKUP
    if not backup.exists():
        shutil.copy2(source, backup)

    def change(s: MemoryStore) -> tuple[Changes, int]:
        if s.meta_flag("legacy_imported"):
            return Changes(), 0
        seen: set[str] = set()
        notes: list[Note] = []
        for raw in _legacy_notes(data):
            note = _legacy_note(raw, now)
            if note is None:
                continue
            key = dedupe_key(note.text)
            if key in seen or s.by_dedupe_key(key) is not None:
                continue
            seen.add(key)
            notes.append(note)
        return Changes(inserts=notes, meta={"legacy_imported": 1}), len(notes)

    return store.write(change)
