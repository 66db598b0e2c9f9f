"""kill -9 of `ai-coding serve tools` in the middle of restoring 1,000 files: the next start
finishes the restore from its journal, says so in one line, and the workspace equals a checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
from ai_coding.v1 import tools_pb2

from tests.support.tools_harness import ToolServiceClient
from tests.support.trees import tree_hash

FILES = 1000


def start(socket_path: Path) -> tuple[subprocess.Popen[bytes], ToolServiceClient]:
    exe = Path(sys.executable).parent / "ai-coding"
    proc = subprocess.Popen([str(exe), "serve", "tools"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = ToolServiceClient(str(socket_path))
    client.connect(alive=lambda: proc.poll() is None)
    return proc, client


def fill(root: Path, letter: str) -> None:
    for i in range(FILES):
        folder = root / f"d{i % 20:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:04d}.txt").write_text(letter * 16384)


def test_kill_9_during_a_restore_of_1000_files_is_finished_at_the_next_start(
        isolated_home: Path, short_dir: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    socket_path = short_dir / "run" / "tools.sock"
    proc, client = start(socket_path)
    try:
        client.open("s1", str(workspace))
        fill(workspace, "a")
        first = client.stub.CreateCheckpoint(tools_pb2.CreateCheckpointRequest(session_id="s1", label="a"))
        hash_a = tree_hash(workspace)
        fill(workspace, "b")
        (workspace / "extra").mkdir()
        (workspace / "extra" / "new.txt").write_text("new\n")
        client.stub.CreateCheckpoint(tools_pb2.CreateCheckpointRequest(session_id="s1", label="b"))
        hash_b = tree_hash(workspace)

        journals = isolated_home / ".local" / "share" / "ai-coding" / "checkpoints"
        errors: list[grpc.RpcError] = []

        def run_restore() -> None:
            try:
                client.stub.RestoreCheckpoint(tools_pb2.RestoreCheckpointRequest(
                    session_id="s1", checkpoint_id=first.checkpoint_id), timeout=120)
            except grpc.RpcError as exc:
                errors.append(exc)

        thread = threading.Thread(target=run_restore)
        thread.start()
        deadline = time.monotonic() + 60
        while not list(journals.glob("*/journal.json")):
            assert time.monotonic() < deadline and thread.is_alive(), "the restore ended before it could be killed"
            time.sleep(0.001)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        thread.join(timeout=30)
    finally:
        client.close()
        if proc.poll() is None:
            proc.kill()
    assert errors and errors[0].code() == grpc.StatusCode.UNAVAILABLE
    assert list(journals.glob("*/journal.json")), "the kill came after the restore had ended"
    assert tree_hash(workspace) not in (hash_a, hash_b), "the kill left nothing half done to repair"

    socket_path.unlink(missing_ok=True)
    proc, client = start(socket_path)
    try:
        opened = client.open("s1", str(workspace))
    finally:
        client.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert tree_hash(workspace) == hash_a
    assert not list(journals.glob("*/journal.json"))
    said = [w for w in opened.warnings if "interrupted" in w]
    assert len(said) == 1 and said[0].endswith("finished it") and first.checkpoint_id in said[0]
    assert said[0] in (short_dir / "run" / "logs" / "tools.log").read_text()
