"""Loop service figures, each with a baseline from the same run.

    .venv/bin/python bench/loop.py [--steps 60]

Prints:
- overhead per model step, p50/p95: the turn's wall time minus the fake
  model's own server time, per step (target p50 < 10 ms);
- events/s delivered to a gRPC client re-attaching to a session (target >= 10,000);
- with ``--base REV`` (default fa37905), that commit's own bench/loop.py run afterwards from a
  temporary worktree (bench/baseline.py), its lines prefixed with the revision;
- session save after a step at 1 MB and 10 MB, p50/p95 (target p95 < 5 ms),
  against a full atomic rewrite of the same session (the naive baseline);
- request bytes per step split into instructions / tools / history / tail
  (target instructions + tools < 10,000);
- wall time of `ai-coding run` on a scripted three-command fix with the loop
  and tools services already running as processes (target < 1.0 s);
- the cost of an approval preview that shows the real diff (the tools service's
  dry run of an edit of a 200-line file) against the arguments-only diff.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]

import yaml  # noqa: E402
from ai_coding.v1 import loop_pb2  # noqa: E402

from services.fake_model import FakeModelServer  # noqa: E402
from services.loop.core.sessions import SessionStore  # noqa: E402
from services.loop.core.turn_events import TextDelta  # noqa: E402
from tests.service.loop.harness import LoopStack, model_config  # noqa: E402

LONG_SESSION_MESSAGES = 4000  # ~4 MB of history


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_turn(stack: LoopStack, session_id: str, text: str) -> list[loop_pb2.TurnEvent]:
    """One turn as the CLI clients run it: ``ConverseBatched``, every event up to ``turn_finished``."""
    start = loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=session_id, input=text))
    call = stack.stub.ConverseBatched(iter([start]), timeout=120)
    events: list[loop_pb2.TurnEvent] = []
    try:
        for batch in call:
            events += batch.events
            if any(e.WhichOneof("event") == "turn_finished" for e in batch.events):
                break
    finally:
        call.cancel()
    return events


def overhead_per_step(base: Path, steps: int) -> tuple[dict[str, list[float]], list[dict[str, int]]]:
    """Per-step overheads (ms) over turns of 3 steps with local tool calls, and byte splits.

    The loop service, the tools service, the fake model and the client all run in this one
    process (deployed, each is its own process): every figure includes their contention for
    one GIL, so it is an upper bound.

    ``total``: client wall time minus the fake model's server time; ``pipeline``: the turn's own
    time minus its model steps' client-side latency (orchestration, saving, events); ``model_client``:
    a step's client-side latency minus the server's time (openai package + HTTP)."""
    turns = max(steps // 3, 1)
    script = []
    for _ in range(turns):
        script += [
            {"tool_calls": [{"name": "todo_write", "arguments": {"add": [{"content": "step"}]}}]},
            {"tool_calls": [{"name": "tool_search", "arguments": {"query": "job"}}]},
            {"text": "done"},
        ]
    work = Path(tempfile.mkdtemp(dir=base))
    (work / "ws").mkdir()
    sock_dir = Path(tempfile.mkdtemp(prefix="aicb-", dir="/tmp"))
    overheads: dict[str, list[float]] = {"total": [], "pipeline": [], "model_client": [], "pipeline_long": []}
    splits: list[dict[str, int]] = []
    with FakeModelServer(script) as fake:
        stack = LoopStack(sock_dir, work / "ws", fake, model_config(fake.url), with_tools=True)
        try:
            sid = stack.open().session_id
            for turn in range(turns):
                before = len(fake.chat_requests)
                start = time.perf_counter()
                events = run_turn(stack, sid, f"turn {turn}")
                wall = (time.perf_counter() - start) * 1000
                reqs = fake.chat_requests[before:]
                model_ms = sum(r.handling_ms for r in reqs)
                overheads["total"].append((wall - model_ms) / len(reqs))
                latencies = [e.model_step_finished.latency_ms for e in events
                             if e.WhichOneof("event") == "model_step_finished"]
                duration = [e.turn_finished.duration_ms for e in events if e.WhichOneof("event") == "turn_finished"]
                overheads["pipeline"].append((duration[0] - sum(latencies)) / len(reqs))
                overheads["model_client"] += [lat - r.handling_ms for lat, r in zip(latencies, reqs, strict=False)]
                for e in events:
                    if e.WhichOneof("event") == "context_assembled":
                        c = e.context_assembled
                        splits.append({"instructions": c.instructions_bytes, "tools": c.tools_bytes,
                                       "history": c.history_bytes, "tail": c.tail_bytes})
            # The same turns on a long session: the pipeline's own share must not grow with it.
            rt = stack.runtime.sessions[sid]
            for i in range(LONG_SESSION_MESSAGES // 2):
                cid = f"pad{i}"
                rt.session.messages += [
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": cid, "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": cid, "content": "x" * 2000}]
            fake.load_script(script[:9])
            for turn in range(3):
                events = run_turn(stack, sid, f"long turn {turn}")
                latencies = [e.model_step_finished.latency_ms for e in events
                             if e.WhichOneof("event") == "model_step_finished"]
                duration = [e.turn_finished.duration_ms for e in events if e.WhichOneof("event") == "turn_finished"]
                overheads["pipeline_long"].append((duration[0] - sum(latencies)) / max(len(latencies), 1))
        finally:
            stack.close()
            shutil.rmtree(sock_dir, ignore_errors=True)
    return overheads, splits


def events_per_second(base: Path, count: int) -> tuple[float, float, float]:
    """Events/s to a re-attaching client over ConverseBatched taken event by event (the test
    harness's client), counted batch by batch, and events/s emitted into the log alone. (The
    per-event ``Converse`` RPC is retired: every client batches.)"""
    work = Path(tempfile.mkdtemp(dir=base))
    (work / "ws").mkdir()
    sock_dir = Path(tempfile.mkdtemp(prefix="aicb-", dir="/tmp"))
    with FakeModelServer([]) as fake:
        stack = LoopStack(sock_dir, work / "ws", fake, model_config(fake.url), with_tools=False)
        try:
            sid = stack.open().session_id
            rt = stack.runtime.sessions[sid]

            async def emit_all() -> float:
                start = time.perf_counter()
                for i in range(count):
                    rt.events.emit(1, TextDelta(text=f"token{i} "))
                return time.perf_counter() - start

            emit_s = stack.services.run(emit_all())
            start = time.perf_counter()
            got = 0
            for _ in stack.attach(sid, 0):
                got += 1
            elapsed = time.perf_counter() - start
            assert got == count, (got, count)
            attach = loop_pb2.ClientMessage(attach=loop_pb2.AttachTurn(session_id=sid, after_seq=0))
            start = time.perf_counter()
            batched = sum(len(b.events) for b in stack.stub.ConverseBatched(iter([attach]), timeout=120))
            batched_s = time.perf_counter() - start
            assert batched == count, (batched, count)
        finally:
            stack.close()
            shutil.rmtree(sock_dir, ignore_errors=True)
    return count / elapsed, count / batched_s, count / emit_s


def save_times(base: Path, megabytes: int, runs: int = 40) -> tuple[float, float, float]:
    """(p50, p95) ms of saving one step into a session of ``megabytes``, and a full rewrite's ms."""
    store = SessionStore(Path(tempfile.mkdtemp(dir=base)))
    session = store.create("fake")
    chunk = "x" * 2000
    while sum(len(str(m.get("content", ""))) for m in session.messages) < megabytes * 1_000_000:
        cid = f"c{len(session.messages)}"
        session.messages += [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "read", "arguments": '{"path": "a.py"}'}}]},
            {"role": "tool", "tool_call_id": cid, "content": chunk},
        ]
    store.compact(session)
    samples = []
    for i in range(runs):
        cid = f"n{i}"
        session.messages += [
            {"role": "assistant", "content": "step", "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "bash", "arguments": '{"command": "pytest"}'}}]},
            {"role": "tool", "tool_call_id": cid, "content": "3 passed" * 20},
        ]
        start = time.perf_counter()
        store.save(session)
        samples.append((time.perf_counter() - start) * 1000)
    start = time.perf_counter()
    store.compact(session)
    full = (time.perf_counter() - start) * 1000
    return pct(samples, 0.5), pct(samples, 0.95), full


def preview_times(base: Path, runs: int = 60) -> tuple[float, float, float]:
    """(p50, p95) ms of the loop's dry-run preview of an edit, and the arguments-only preview's p50."""
    from services.loop.tools.previews import approval_preview

    work = Path(tempfile.mkdtemp(dir=base))
    (work / "ws").mkdir()
    (work / "ws" / "big.py").write_text("".join(f"value_{n} = {n}\n" for n in range(1, 201)))
    sock_dir = Path(tempfile.mkdtemp(prefix="aicb-", dir="/tmp"))
    edit = {"path": "big.py", "old_string": "value_120 = 120\n", "new_string": "value_120 = 121\n"}
    with FakeModelServer([]) as fake:
        stack = LoopStack(sock_dir, work / "ws", fake, model_config(fake.url), with_tools=True)
        try:
            sid = stack.open().session_id
            tools = stack.runtime.deps.tools

            async def read_then_preview() -> list[float]:
                async for _ in tools.call(sid, "r1", "read", json.dumps({"path": "big.py"}), 30):
                    pass
                samples = []
                for i in range(runs):
                    start = time.perf_counter()
                    outcome = await tools.dry_run(sid, f"e{i}", "edit", json.dumps(edit), 10)
                    samples.append((time.perf_counter() - start) * 1000)
                    assert outcome.ok, outcome.output
                return samples

            dry = stack.services.run(read_then_preview(), timeout=120)
        finally:
            stack.close()
            shutil.rmtree(sock_dir, ignore_errors=True)
    plain = []
    for _ in range(runs):
        start = time.perf_counter()
        approval_preview("edit", edit)
        plain.append((time.perf_counter() - start) * 1000)
    return pct(dry, 0.5), pct(dry, 0.95), pct(plain, 0.5)


FIX_SCRIPT = [
    {"match": "fix the failing test", "tool_calls": [{"name": "bash", "arguments": {"command": "python3 -B test_calc.py"}}]},
    {"match": "AssertionError", "tool_calls": [{"name": "read", "arguments": {"path": "calc.py"}},
                                               {"name": "edit", "arguments": {
        "path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}}]},
    {"match": "calc.py", "tool_calls": [{"name": "bash", "arguments": {"command": "python3 -B test_calc.py && echo ALL-OK"}}]},
    {"match": "ALL-OK", "text": "Fixed add() in calc.py; the test passes."},
]


def fix_task_wall_time(base: Path) -> tuple[float, int, str, list[dict[str, Any]]]:
    """Seconds of `ai-coding run` on the fix task with every service already up; exit code; last line;
    and the ContextAssembled byte splits of its steps (read back from the turn's trace)."""
    home = Path(tempfile.mkdtemp(dir=base))
    run_dir = Path(tempfile.mkdtemp(prefix="aicr-", dir="/tmp"))
    ws = home / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (ws / "test_calc.py").write_text("from calc import add\nassert add(2, 3) == 5\nprint('ok')\n")
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "AI_CODING_RUNTIME_DIR": str(run_dir)}
    for var in ("AI_CODING_CONFIG", "AI_CODING_MODEL", "AI_CODING_BASE_URL", "AI_CODING_API_KEY"):
        env.pop(var, None)
    exe = str(Path(sys.executable).with_name("ai-coding"))
    with FakeModelServer(FIX_SCRIPT) as fake:
        cfg = model_config(fake.url)
        (home / ".config" / "ai-coding").mkdir(parents=True, mode=0o700)
        (home / ".config" / "ai-coding" / "config.yaml").write_text(yaml.safe_dump(cfg))
        try:
            up = subprocess.run([exe, "up"], env=env, capture_output=True, timeout=120)
            if up.returncode != 0:
                return 0.0, -2, f"ai-coding up failed: {up.stdout.decode()[-200:]} {up.stderr.decode()[-200:]}", []
            start = time.perf_counter()
            done = subprocess.run([exe, "run", "--auto-approve", "-w", str(ws), "fix the failing test"], env=env,
                                  capture_output=True, timeout=120)
            wall = time.perf_counter() - start
            start = time.perf_counter()
            subprocess.run([exe, "--version"], env=env, capture_output=True, timeout=60)
            version_s = time.perf_counter() - start
        finally:
            subprocess.run([exe, "down"], env=env, capture_output=True, timeout=120)
            shutil.rmtree(run_dir, ignore_errors=True)
        print(f"  (baseline: `ai-coding --version` alone took {version_s:.2f} s in the same environment)")
    last = (done.stdout.decode().strip().splitlines() or [done.stderr.decode().strip()])[-1:]
    fixed = "a + b" in (ws / "calc.py").read_text()
    splits = [json.loads(line) for trace in (ws / ".ai-coding" / "traces").glob("*/turn-*.jsonl")
              for line in trace.read_text().splitlines() if '"context_assembled"' in line]
    for summary in (ws / ".ai-coding" / "traces").glob("*/summary.json"):
        turn_ms = json.loads(summary.read_text())["turns"][0]["duration_ms"]
        print(f"  (the turn itself, inside the loop service: {turn_ms / 1000:.2f} s)")
    return wall, done.returncode if fixed else -1, last[0] if last else "", splits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--base", default="fa37905", help="commit whose bench/loop.py runs afterwards ('' for none)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-loop-"))
    try:
        overheads, splits = overhead_per_step(base, args.steps)
        o = overheads
        print(f"loop overhead per model step (wall - fake model): p50 {pct(o['total'], 0.5):.2f} ms  "
              f"p95 {pct(o['total'], 0.95):.2f} ms over {len(o['total'])} turns (target p50 < 10 ms)")
        print(f"  of which pipeline (turn - model steps): p50 {pct(o['pipeline'], 0.5):.2f} ms  "
              f"p95 {pct(o['pipeline'], 0.95):.2f} ms; model client (HTTP client - server): "
              f"p50 {pct(o['model_client'], 0.5):.2f} ms  p95 {pct(o['model_client'], 0.95):.2f} ms")
        print(f"  pipeline at a {LONG_SESSION_MESSAGES}-message (~4 MB) session: p50 "
              f"{pct(o['pipeline_long'], 0.5):.2f} ms over {len(o['pipeline_long'])} turns")
        print(f"  machine load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        sent, batched, emitted = events_per_second(base, args.events)
        print(f"events delivered to a gRPC client: ConverseBatched {batched:,.0f}/s, taken one by one by the "
              f"client {sent:,.0f}/s (log alone {emitted:,.0f}/s; target >= 10,000/s; the per-event Converse, "
              "retired, is the base's first figure)")
        for mb in (1, 10):
            p50, p95, full = save_times(base, mb)
            print(f"session save after a step at {mb} MB: p50 {p50:.2f} ms  p95 {p95:.2f} ms "
                  f"(full atomic rewrite baseline {full:.1f} ms = {full / max(p95, 1e-6):.0f}x; target p95 < 5 ms)")
        wall, code, last, fix_splits = fix_task_wall_time(base)
        for label, rows in (("fix task, all tools", [
                {k.removesuffix("_bytes"): int(r[k]) for k in r if k.endswith("_bytes")} for r in fix_splits]),
                ("local tools only", splits)):
            if not rows:
                print(f"request bytes per step ({label}): no data")
                continue
            mean = {k: statistics.mean(r[k] for r in rows) for k in rows[0]}
            print(f"request bytes per step ({label}, mean of {len(rows)}): "
                  + "  ".join(f"{k} {v:,.0f}" for k, v in mean.items())
                  + f"  | instructions+tools {mean['instructions'] + mean['tools']:,.0f} (target < 10,000; "
                  "OpenCode ~31 KB, Codex CLI ~42 KB per step)")
        print(f"`ai-coding run` three-command fix with services up: {wall:.2f} s, exit {code} "
              f"(target < 1.0 s; Codex CLI 1.2 s, OpenCode 10.7 s) | {last[:100]}")
        p50, p95, plain = preview_times(base)
        print(f"approval preview with the real diff (tools dry run, edit of a 200-line file): p50 {p50:.2f} ms  "
              f"p95 {p95:.2f} ms, once per approval (arguments-only diff: {plain:.3f} ms)")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.base:
        run_base(args.base, args.steps, args.events)


def run_base(rev: str, steps: int, events: int) -> None:
    """The base commit's own bench/loop.py, from a temporary worktree, in this same run."""
    from bench.baseline import load, trees

    print(f"--- the same figures at {rev} (its own bench/loop.py; {load()}) ---")
    from bench.baseline import entry_point

    with trees(rev) as checkout, tempfile.TemporaryDirectory(prefix="aicb-shim-") as shim:
        old = checkout[0]
        env = old.env({k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
        # Its fix task runs the `ai-coding` beside sys.executable: there, a script running the old
        # tree's own console entry point (this virtualenv's is the working tree's).
        module, func = entry_point(old.root)
        script = Path(shim) / "ai-coding"
        script.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n")
        script.chmod(0o755)
        launch = (f"import runpy, sys; sys.executable = {str(Path(shim) / 'python')!r}; "
                  f"sys.argv = ['loop.py', '--steps', '{steps}', '--events', '{events}']; "
                  f"runpy.run_path({str(old.root / 'bench' / 'loop.py')!r}, run_name='__main__')")
        done = subprocess.run([sys.executable, "-c", launch], env=env, cwd=old.root, capture_output=True,
                              text=True, timeout=1800)
        for line in (done.stdout + done.stderr).splitlines():
            print(f"[{rev}] {line}")


if __name__ == "__main__":
    main()
