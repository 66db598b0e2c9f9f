"""kill -9 of the real memory service in the middle of a burst of writes loses no acknowledged note."""

from __future__ import annotations

import os
import signal
import sqlite3
import tempfile
import threading
import time
from pathlib import Path

import grpc
from ai_coding.v1 import memory_pb2 as pb

from services.memory.store import MemoryStore, db_path
from tests.service.memory.memory_harness import hazard_text, running_service, start_service, stop_service

WRITERS = 4
KILL_AFTER = 150


def test_kill_9_during_a_write_burst_loses_no_acknowledged_note() -> None:
    with running_service() as service, tempfile.TemporaryDirectory() as ws:
        acknowledged: list[str] = []
        lock = threading.Lock()
        stop = threading.Event()

        def writer(w: int) -> None:
            i = 0
            while not stop.is_set():
                text = hazard_text(w, 0, i)
                i += 1
                try:
                    resp = service.stub.WriteNote(
                        pb.WriteNoteRequest(workspace=ws, note=pb.NoteCandidate(text=text, kind="fact")), timeout=10
                    )
                except grpc.RpcError:
                    return  # the service is gone: this write was never acknowledged
                assert resp.action == pb.RECONCILE_ACTION_ADD
                with lock:
                    acknowledged.append(text)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while len(acknowledged) < KILL_AFTER and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(service.proc.pid, signal.SIGKILL)  # mid-burst: writers are still sending
        service.proc.wait(timeout=10)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        assert len(acknowledged) >= KILL_AFTER

        db = db_path(Path(ws))
        conn = sqlite3.connect(str(db))
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            stored = {r[0] for r in conn.execute("SELECT text FROM notes")}
        finally:
            conn.close()
        missing = [t for t in acknowledged if t not in stored]
        assert not missing, f"{len(missing)} acknowledged notes lost"

        # a restarted service serves every acknowledged note
        restarted = start_service(service.root)
        try:
            listed = restarted.stub.ListNotes(pb.ListNotesRequest(workspace=ws), timeout=30)
            assert set(acknowledged) <= {n.text for n in listed.notes}
        finally:
            stop_service(restarted)
        store = MemoryStore(db)
        assert store.count() == len(stored)
        store.close()
