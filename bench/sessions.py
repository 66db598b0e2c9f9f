"""Many short sessions at once on one loop service, with a one-session baseline from the same run.

    .venv/bin/python bench/sessions.py [--sessions 200] [--waves 1]

The services run as real processes (`ai-coding up` in a private HOME and runtime dir),
the model is the fake model. Each session is what `ai-coding run` does: OpenSession, then
one turn over ConverseBatched up to turn_finished. Prints:
- the baseline: 10 sessions one after another, p50 turn time;
- per wave of N concurrent sessions (one client thread each): how many completed, wall
  time, p50/p95 turn time and their ratio to the baseline p50;
- the loop service's RSS before the first wave and after the last, and how many sessions
  it holds in memory (capped at 100 idle: see services/loop/session/runtime.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]

import grpc  # noqa: E402
from ai_coding.v1 import loop_pb2, loop_pb2_grpc  # noqa: E402

from services.fake_model import FakeModelServer  # noqa: E402


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_session(stub: loop_pb2_grpc.AgentLoopStub, workspace: str, n: int) -> tuple[bool, float]:
    """OpenSession + one turn; (completed, seconds from Start to turn_finished)."""
    opened = stub.OpenSession(loop_pb2.OpenSessionLoopRequest(workspace=workspace, auto_approve=True), timeout=60)
    start = loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=opened.session_id, input=f"task {n}"))
    began = time.perf_counter()
    call = stub.ConverseBatched(iter([start]), timeout=120)
    try:
        for batch in call:
            for event in batch.events:
                if event.WhichOneof("event") == "turn_finished":
                    ok = event.turn_finished.status == loop_pb2.TURN_STATUS_COMPLETED
                    return ok, time.perf_counter() - began
    finally:
        call.cancel()
    return False, time.perf_counter() - began


def wave(target: str, workspace: str, count: int, offset: int) -> tuple[int, float, list[float], list[str]]:
    """``count`` sessions at once, one channel and thread each (as separate `run` clients would)."""
    results: list[tuple[bool, float]] = []
    errors: list[str] = []
    lock = threading.Lock()
    gate = threading.Barrier(count)

    def client(n: int) -> None:
        with grpc.insecure_channel(target) as channel:
            stub = loop_pb2_grpc.AgentLoopStub(channel)
            gate.wait()
            try:
                outcome = one_session(stub, workspace, n)
            except grpc.RpcError as err:
                with lock:
                    errors.append(f"{err.code().name}: {err.details()}")
                return
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=client, args=(offset + i,)) for i in range(count)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    return sum(ok for ok, _ in results), wall, [s for _, s in results], errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=200, help="concurrent sessions per wave")
    parser.add_argument("--waves", type=int, default=1, help="waves one after another (sessions pile up)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="aic-bs-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_CODING_")}
    home = base / "home"
    (home / ".config" / "ai-coding").mkdir(parents=True)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), AI_CODING_RUNTIME_DIR=str(base / "run"))
    workspace = base / "ws"
    workspace.mkdir()
    cli = [sys.executable, "-m", "clients.cli.main"]
    with FakeModelServer([{"text": "done, briefly", "repeat": "forever"}]) as fake:
        config = {"default_model": "fake",
                  "models": {"fake": {"provider": "generic", "model": "fake-model", "base_url": fake.url,
                                      "api_key": "k", "max_retries": 0}},
                  "loop": {"memory": False, "mcp": False, "harvest": False}}
        (home / ".config" / "ai-coding" / "config.yaml").write_text(json.dumps(config))
        try:
            subprocess.run([*cli, "up"], env=env, check=True, capture_output=True, timeout=120, cwd=ROOT)
            state = json.loads((base / "run" / "supervisor.json").read_text())
            loop_pid = int(state["services"]["loop"]["pid"])
            target = f"unix:{base / 'run' / 'loop.sock'}"
            with grpc.insecure_channel(target) as channel:
                stub = loop_pb2_grpc.AgentLoopStub(channel)
                one_session(stub, str(workspace), -1)  # warm up: imports, first model connection
                baseline = [one_session(stub, str(workspace), -2 - i)[1] for i in range(10)]
            base_p50 = pct(baseline, 0.5)
            print(f"baseline: 10 sessions one after another, p50 turn {base_p50 * 1000:.0f} ms")
            rss_before = rss_mib(loop_pid)
            for w in range(args.waves):
                done, wall, times, errors = wave(target, str(workspace), args.sessions, w * args.sessions)
                line = (f"wave {w + 1}: {done}/{args.sessions} completed in {wall:.1f} s wall; turn p50 "
                        f"{pct(times, 0.5) * 1000:.0f} ms ({pct(times, 0.5) / base_p50:.1f}x baseline), p95 "
                        f"{pct(times, 0.95) * 1000:.0f} ms ({pct(times, 0.95) / base_p50:.1f}x)") if times else \
                    f"wave {w + 1}: 0/{args.sessions} completed"
                print(line)
                for error in sorted(set(errors))[:5]:
                    print(f"  error x{errors.count(error)}: {error}")
            print(f"loop RSS: {rss_before:.0f} MiB before, {rss_mib(loop_pid):.0f} MiB after "
                  f"{args.sessions * args.waves + 11} sessions (pid {loop_pid})")
            print(f"load: {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} cores)")
        finally:
            subprocess.run([*cli, "down"], env=env, capture_output=True, timeout=120, cwd=ROOT)
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
