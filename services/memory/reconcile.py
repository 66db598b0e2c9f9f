"""Reconcile: the single write path. One candidate in, one ADD/UPDATE/SUPERSEDE/NOOP out.

``decide`` is a pure function of the candidate and a lookup over the notes as
committed when the write transaction began; the store applies what it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from services.memory.gates import write_rejection
from services.memory.model import Action, Candidate, Note, Outcome
from services.memory.scenes import fold_scene
from services.memory.similarity import dedupe_key, is_near_duplicate
from services.memory.store import Changes

SIMILAR_CANDIDATES = 5


class NoteLookup(Protocol):
    """What reconcile needs to know about the stored notes."""

    def get(self, note_id: str) -> Note | None: ...

    def by_dedupe_key(self, key: str) -> Note | None: ...

    def similar(self, text: str, kind: str, scene: str) -> list[Note]: ...


@dataclass(frozen=True)
class Clock:
    """Time and id source for a decision (injected so decisions stay pure)."""

    now: float
    new_id: Callable[[], str]


def normalize(candidate: Candidate) -> Candidate:
    """Trimmed text, lowercase kind (default fact), importance in 1..5, folded scene."""
    kind = (candidate.kind or "fact").strip().lower().replace(" ", "_") or "fact"
    return replace(
        candidate,
        text=" ".join(candidate.text.split()),
        kind=kind,
        importance=min(max(int(candidate.importance or 3), 1), 5),
        scene=fold_scene(candidate.scene),
        scope=candidate.scope or "workspace",
    )


def _merge_sources(old: list[str], new: list[str]) -> list[str]:
    return list(dict.fromkeys([*old, *new]))


def _new_note(c: Candidate, clock: Clock) -> Note:
    return Note(
        id=clock.new_id(), text=c.text, kind=c.kind, importance=c.importance, pinned=c.pinned, scene=c.scene,
        evidence=c.evidence, scope=c.scope, source_message_ids=list(c.source_message_ids),
        created=clock.now, updated=clock.now,
    )


def _updated(note: Note, c: Candidate, clock: Clock) -> Note:
    return replace(
        note, text=c.text, kind=c.kind, importance=max(note.importance, c.importance),
        pinned=note.pinned or c.pinned, scene=c.scene or note.scene, evidence=c.evidence or note.evidence,
        source_message_ids=_merge_sources(note.source_message_ids, c.source_message_ids), updated=clock.now,
    )


def decide(raw: Candidate, notes: NoteLookup, clock: Clock) -> tuple[Changes, Outcome]:
    """What to write for one candidate."""
    rejected = write_rejection(raw.text)
    if rejected:
        return Changes(), Outcome(Action.NOOP, None, rejected)
    c = normalize(raw)
    target = notes.get(c.target_id) if c.target_id else None
    if c.action is Action.NOOP:
        return Changes(), Outcome(Action.NOOP, target)
    if c.action is Action.SUPERSEDE and target is not None:
        new = _new_note(replace(c, pinned=c.pinned or target.pinned), clock)
        return Changes(inserts=[new], deletes=[target.id]), Outcome(Action.SUPERSEDE, new)
    if c.action is Action.UPDATE and target is not None:
        note = _updated(target, c, clock)
        return Changes(updates=[note]), Outcome(Action.UPDATE, note)
    same = notes.by_dedupe_key(dedupe_key(c.text))
    if same is not None:
        return _fold_exact(same, c, clock)
    for other in notes.similar(c.text, c.kind, c.scene):
        if is_near_duplicate(other.text, c.text):
            note = _updated(other, c, clock)
            return Changes(updates=[note]), Outcome(Action.UPDATE, note)
    new = _new_note(c, clock)
    return Changes(inserts=[new]), Outcome(Action.ADD, new)


def _fold_exact(same: Note, c: Candidate, clock: Clock) -> tuple[Changes, Outcome]:
    """Identical text folds into the existing note whatever its scene; a missing scene is backfilled.

    Harvest-then-label (memory_write adding a scene later) is the common order,
    so dropping the later scene would silently lose the label.
    """
    backfill = not same.scene and bool(c.scene)
    pin = c.pinned and not same.pinned
    sources = _merge_sources(same.source_message_ids, c.source_message_ids)
    if not (backfill or pin or sources != same.source_message_ids):
        return Changes(), Outcome(Action.NOOP, same)
    note = replace(
        same, scene=c.scene if backfill else same.scene, pinned=same.pinned or c.pinned,
        source_message_ids=sources, updated=clock.now,
    )
    return Changes(updates=[note]), Outcome(Action.UPDATE, note)
