"""Protobuf <-> domain mapping; protobuf goes no further than this module."""

from __future__ import annotations

import json

from ai_coding.v1 import memory_pb2 as pb

from services.memory.errors import InvalidRequest
from services.memory.model import (
    Action,
    ArchivedMessage,
    Candidate,
    ConsolidateReport,
    Note,
    Outcome,
    RecallQuery,
    RecallResult,
)


def note_to_pb(note: Note) -> pb.Note:
    """Domain note -> wire note."""
    return pb.Note(
        id=note.id, text=note.text, kind=note.kind, importance=note.importance, pinned=note.pinned,
        scene=note.scene, evidence=note.evidence, scope=note.scope,
        source_message_ids=list(note.source_message_ids), hits=note.hits, last_used=note.last_used,
        created=note.created, updated=note.updated,
    )


def _action(value: int) -> Action:
    try:
        return Action(value)
    except ValueError:
        raise InvalidRequest(
            f"unknown reconcile action {value}", hint="Use ADD, UPDATE, SUPERSEDE, NOOP or leave it unset."
        ) from None


def candidate_from_pb(msg: pb.NoteCandidate) -> Candidate:
    """Wire candidate -> domain candidate."""
    return Candidate(
        text=msg.text, kind=msg.kind or "fact", importance=msg.importance or 3, action=_action(int(msg.action)),
        target_id=msg.target_id, scene=msg.scene, evidence=msg.evidence,
        source_message_ids=list(msg.source_message_ids), pinned=msg.pinned, scope=msg.scope or "workspace",
    )


def write_response(outcome: Outcome) -> pb.WriteNoteResponse:
    """One reconcile outcome as a WriteNote answer."""
    resp = pb.WriteNoteResponse(action=outcome.action.value, rejected_reason=outcome.rejected_reason)  # type: ignore[arg-type]
    if outcome.note is not None:
        resp.note.CopyFrom(note_to_pb(outcome.note))
    return resp


def reconcile_response(outcomes: list[Outcome]) -> pb.ReconcileResponse:
    """Reconcile outcomes on the wire."""
    return pb.ReconcileResponse(
        outcomes=[
            pb.ReconcileOutcome(
                action=o.action.value,  # type: ignore[arg-type]
                note_id=o.note.id if o.note else "",
                rejected_reason=o.rejected_reason,
            )
            for o in outcomes
        ]
    )


def recall_query(msg: pb.RecallRequest) -> RecallQuery:
    """Wire recall request -> domain query."""
    return RecallQuery(
        query=msg.query, k=msg.k, kind=msg.kind, evidence=msg.evidence, scope=msg.scope, scene=msg.scene,
        since_days=msg.since_days, include_near_misses=msg.include_near_misses,
        timeout_seconds=msg.timeout_seconds, skip_hit_count=msg.skip_hit_count,
    )


def recall_response(result: RecallResult) -> pb.RecallResponse:
    """Domain recall result -> wire (diagnostics as JSON text)."""
    return pb.RecallResponse(
        hits=[
            pb.RecallHit(note=note_to_pb(h.note), score=h.score, relevance=h.relevance, matched_terms=h.matched_terms)
            for h in result.hits
        ],
        diagnostics_json=json.dumps(result.diagnostics, ensure_ascii=False, sort_keys=True),
        rendered=result.rendered,
    )


def consolidate_response(report: ConsolidateReport) -> pb.ConsolidateResponse:
    """Consolidate counts on the wire."""
    return pb.ConsolidateResponse(
        merged=report.merged, promoted=report.promoted, expired=report.expired, evicted=report.evicted
    )


def archived_from_pb(msg: pb.ArchivedMessage) -> ArchivedMessage:
    """Wire archived message -> domain."""
    return ArchivedMessage(session_id=msg.session_id, index=msg.index, role=msg.role, text=msg.text)


def archived_to_pb(m: ArchivedMessage) -> pb.ArchivedMessage:
    """Domain archived message -> wire."""
    return pb.ArchivedMessage(session_id=m.session_id, index=m.index, role=m.role, text=m.text)
