"""Real memory-service processes and hazard workers shared by the memory service and fault tests."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from ai_coding.v1 import memory_pb2 as pb
from ai_coding.v1 import memory_pb2_grpc as pb_grpc

from services.kernel.channels import check_health, sync_channel
from services.kernel.endpoints import PROTO_SERVICE, parse_endpoint

REPO = Path(__file__).resolve().parents[3]


@dataclass
class ServiceProcess:
    """A running ``ai-coding serve memory`` and a stub connected to it."""

    proc: subprocess.Popen[bytes]
    address: str
    stub: pb_grpc.MemoryStub
    channel: grpc.Channel
    root: Path
    log: Path


def _wait_serving(address: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    endpoint = parse_endpoint("memory", address)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"memory service exited with {proc.returncode}")
        if check_health(endpoint, PROTO_SERVICE["memory"], timeout=1.0) == "SERVING":
            return
        time.sleep(0.05)
    raise RuntimeError("memory service did not become SERVING")


def start_service(root: Path, config_yaml: str = "") -> ServiceProcess:
    """Start the real service process on a unix socket under ``root`` (a short /tmp dir)."""
    home = root / "home"
    (home / ".config" / "ai-coding").mkdir(parents=True, exist_ok=True)
    if config_yaml:
        (home / ".config" / "ai-coding" / "config.yaml").write_text(config_yaml)
    address = f"unix:{root}/memory.sock"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_CODING_")}
    env.update(
        HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local" / "share"),
        AI_CODING_RUNTIME_DIR=str(root / "run"), AI_CODING_MEMORY_ENDPOINT=address,
    )
    log = root / "service.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "clients.cli.entry", "serve", "memory"], cwd=REPO, env=env,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    _wait_serving(address, proc)
    channel = sync_channel(parse_endpoint("memory", address))
    return ServiceProcess(proc, address, pb_grpc.MemoryStub(channel), channel, root, log)


def stop_service(service: ServiceProcess) -> None:
    """SIGTERM the service and wait (SIGKILL after 10 s)."""
    service.channel.close()
    if service.proc.poll() is None:
        service.proc.send_signal(signal.SIGTERM)
        try:
            service.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            service.proc.kill()
            service.proc.wait(timeout=10)


@contextmanager
def running_service(config_yaml: str = "") -> Iterator[ServiceProcess]:
    """A service in a fresh short directory, stopped and removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="aicm-", dir="/tmp"))
    service = start_service(root, config_yaml)
    try:
        yield service
    finally:
        stop_service(service)
        shutil.rmtree(root, ignore_errors=True)


def hazard_text(worker: int, round_no: int, i: int) -> str:
    """A note text unique per (worker, round, i) and far from every other one (no near-duplicate folding)."""
    token = os.urandom(12).hex()
    return f"hazard r{round_no} w{worker} i{i} marker {token} {os.urandom(6).hex()}"


def store_worker(db: str, worker: int, rounds: int, writes: int, barrier: Any, done: Any) -> None:
    """Hazard worker: its own MemoryStore; waits on ``barrier`` before every write."""
    from services.kernel.ids import new_id
    from services.memory.model import Candidate, Outcome
    from services.memory.reconcile import Clock, decide
    from services.memory.store import Changes, MemoryStore

    store = MemoryStore(Path(db))
    try:
        for r in range(rounds):
            for i in range(writes):
                barrier.wait(timeout=60)
                cand = Candidate(text=hazard_text(worker, r, i), kind="fact")

                def run(s: MemoryStore, c: Candidate = cand) -> tuple[Changes, Outcome]:
                    return decide(c, s, Clock(time.time(), lambda: new_id("n")))

                store.write(run)
            done.wait(timeout=120)  # the parent checks the round
            done.wait(timeout=120)  # and releases the next one
    finally:
        store.close()


def grpc_worker(address: str, workspace: str, worker: int, rounds: int, writes: int, barrier: Any, done: Any) -> None:
    """Hazard worker through the real service: WriteNote RPCs, barrier before every write."""
    channel = sync_channel(parse_endpoint("memory", address))
    stub = pb_grpc.MemoryStub(channel)
    try:
        for r in range(rounds):
            for i in range(writes):
                barrier.wait(timeout=60)
                resp = stub.WriteNote(
                    pb.WriteNoteRequest(workspace=workspace, note=pb.NoteCandidate(text=hazard_text(worker, r, i), kind="fact")),
                    timeout=30,
                )
                if resp.action != pb.RECONCILE_ACTION_ADD:
                    raise RuntimeError(f"unexpected action {resp.action} ({resp.rejected_reason})")
            done.wait(timeout=120)
            done.wait(timeout=120)
    finally:
        channel.close()
