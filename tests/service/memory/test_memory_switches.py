"""The memory config section through the real service: read-only mode and producer switches."""

from __future__ import annotations

import tempfile

from ai_coding.v1 import memory_pb2 as pb

from tests.service.memory.memory_harness import running_service


def test_read_only_memory_refuses_writes_and_housekeeping_but_still_recalls() -> None:
    with tempfile.TemporaryDirectory() as ws:
        with running_service() as svc:
            svc.stub.WriteNote(pb.WriteNoteRequest(workspace=ws, note=pb.NoteCandidate(text="Old trivia about the printer")), timeout=10)
        with running_service("memory:\n  extraction_enabled: false\n  max_index_entries: 0\n") as svc:
            resp = svc.stub.WriteNote(pb.WriteNoteRequest(workspace=ws, note=pb.NoteCandidate(text="Builds use uv")), timeout=10)
            assert (resp.action, resp.rejected_reason) == (pb.RECONCILE_ACTION_NOOP, "extraction_disabled")
            report = svc.stub.Consolidate(pb.ConsolidateRequest(workspace=ws), timeout=10)
            assert report.evicted == 0  # eviction is a write too
            hits = svc.stub.Recall(pb.RecallRequest(workspace=ws, query="printer trivia"), timeout=10).hits
            assert [h.note.text for h in hits] == ["Old trivia about the printer"]


def test_extraction_extractors_lets_only_the_named_producer_write() -> None:
    with tempfile.TemporaryDirectory() as ws, running_service("memory:\n  extraction_extractors: [harvest]\n") as svc:
        by_tool = svc.stub.WriteNote(pb.WriteNoteRequest(workspace=ws, note=pb.NoteCandidate(text="Builds use uv")), timeout=10)
        assert by_tool.rejected_reason == "extraction_disabled"
        by_harvest = svc.stub.Reconcile(pb.ReconcileRequest(
            workspace=ws, extractor="harvest", candidates=[pb.NoteCandidate(text="Builds use uv")]), timeout=10)
        assert by_harvest.outcomes[0].action == pb.RECONCILE_ACTION_ADD
