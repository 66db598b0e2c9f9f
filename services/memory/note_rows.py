"""How a note is a row of ``notes``: the columns, the row <-> ``Note`` mapping, and the queries that
read changed rows with their persisted terms."""

from __future__ import annotations

import json
import logging

from services.memory.gates import shape_rejection
from services.memory.model import Note
from services.memory.scenes import fold_scene

log = logging.getLogger("ai_coding.memory")

COLUMNS = (
    "id, text, kind, importance, pinned, scene, evidence, scope, source_message_ids, "
    "hits, last_used, created, updated"
)
NOTE_FIELDS = len(COLUMNS.split(","))
SCENE_COLUMN = [c.strip() for c in COLUMNS.split(",")].index("scene")
"""Where ``scene`` is in ``COLUMNS`` (stored as written; a note read from it holds the folded key)."""
CHANGED_ROWS = (
    "SELECT n.doc, " + ", ".join(f"n.{c.strip()}" for c in COLUMNS.split(",")) + ", t.version, t.checksum, t.terms "
    "FROM notes n LEFT JOIN note_terms t ON t.doc = n.doc WHERE n.rev > ?"
)
SAVE_TERMS = "INSERT OR REPLACE INTO note_terms (doc, version, checksum, terms) VALUES (?, ?, ?, ?)"


def row_to_note(row: tuple[object, ...]) -> Note:
    """The note of one ``notes`` row in ``COLUMNS`` order (raises ValueError/TypeError on a malformed one)."""
    return Note(
        id=str(row[0]),
        text=str(row[1]),
        kind=str(row[2]),
        importance=int(row[3]),  # type: ignore[call-overload]
        pinned=bool(row[4]),
        scene=fold_scene(str(row[5])),
        evidence=str(row[6]),
        scope=str(row[7]),
        source_message_ids=[] if row[8] == "[]" else [str(x) for x in json.loads(str(row[8]) or "[]")],
        hits=int(row[9]),  # type: ignore[call-overload]
        last_used=float(row[10]),  # type: ignore[arg-type]
        created=float(row[11]),  # type: ignore[arg-type]
        updated=float(row[12]),  # type: ignore[arg-type]
    )


def healthy_note(row: tuple[object, ...]) -> Note | None:
    """The note of a row, or None for a malformed row or one that fails the shape gate (skipped, kept on disk)."""
    try:
        note = row_to_note(row)
    except (ValueError, TypeError):
        log.warning("memory: skipped a malformed note row %r", row[0])
        return None
    if shape_rejection(note.text):
        log.warning("memory: skipped note %s that is not note-shaped", note.id)
        return None
    return note


def note_params(note: Note) -> tuple[object, ...]:
    """A note as the parameters of a row in ``COLUMNS`` order."""
    return (
        note.id, note.text, note.kind, note.importance, int(note.pinned), note.scene, note.evidence,
        note.scope, json.dumps(note.source_message_ids), note.hits, note.last_used, note.created,
        note.updated,
    )
