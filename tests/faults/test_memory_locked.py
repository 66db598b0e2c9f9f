"""Another process holding the write lock: writes fail cleanly, recall still answers."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

import grpc
import pytest
from ai_coding.v1 import memory_pb2 as pb

from services.kernel.errors import reason_of
from services.memory.store import db_path
from tests.service.memory.memory_harness import running_service


def test_a_held_write_lock_fails_writes_with_a_reason_and_recall_still_returns_hits() -> None:
    with tempfile.TemporaryDirectory() as ws, running_service("memory:\n  busy_timeout_ms: 300\n") as svc:
        svc.stub.WriteNote(pb.WriteNoteRequest(workspace=ws, note=pb.NoteCandidate(text="Builds use uv")), timeout=10)
        holder = sqlite3.connect(str(db_path(Path(ws))), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(grpc.RpcError) as err:
                svc.stub.WriteNote(pb.WriteNoteRequest(workspace=ws, note=pb.NoteCandidate(text="Tests use pytest")),
                                   timeout=10)
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
            assert reason_of(err.value) == "memory_store_unavailable"
            assert "retry" in (err.value.details() or "")
            resp = svc.stub.Recall(pb.RecallRequest(workspace=ws, query="how do builds work uv"), timeout=10)
            assert [h.note.text for h in resp.hits] == ["Builds use uv"]
            assert json.loads(resp.diagnostics_json)["hit_count_failed"] is True
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        ok = svc.stub.WriteNote(pb.WriteNoteRequest(workspace=ws, note=pb.NoteCandidate(text="Tests use pytest")), timeout=10)
        assert ok.action == pb.RECONCILE_ACTION_ADD
