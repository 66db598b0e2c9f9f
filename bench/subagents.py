"""Subagent figures, each with a baseline from the same run.

    .venv/bin/python bench/subagents.py [--runs 20]

Prints:
- time from a background ``subAgent`` call to its run id: the loop's own time
  between the call's tool_started and tool_finished events, p50/p95 (target < 20 ms),
  against a ``todo_write`` call measured the same way (the cheapest loop tool);
- the overhead of a foreground child over running its steps directly: the
  subAgent call's wall time minus the fake model's server time for the child's
  requests, against the same three steps run as a turn of the parent (its
  duration minus the model's time); the difference is what the child costs
  (its own tool stack, history, events relayed with a scope, transcript).

Everything runs in this one process (loop service, fake model, client), so the
figures include their contention for one GIL: an upper bound.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]

from ai_coding.v1 import loop_pb2  # noqa: E402

from services.fake_model import FakeModelServer  # noqa: E402
from tests.service.loop.harness import LoopStack, model_config  # noqa: E402

CHILD_STEPS: list[dict[str, Any]] = [{"tool_calls": [{"name": "todo_write", "arguments": {"add": [{"content": "one"}]}}]},
               {"tool_calls": [{"name": "todo_write", "arguments": {"goal": "bench"}}]},
               {"text": "done"}]


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_turn(stack: LoopStack, session_id: str, text: str) -> list[loop_pb2.TurnEvent]:
    start = loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=session_id, input=text))
    call = stack.stub.ConverseBatched(iter([start]), timeout=120)
    events: list[loop_pb2.TurnEvent] = []
    try:
        for batch in call:
            events += batch.events
            if any(e.WhichOneof("event") == "turn_finished" and not e.HasField("scope") for e in batch.events):
                break
    finally:
        call.cancel()
    return events


def call_ms(events: list[loop_pb2.TurnEvent], tool: str) -> float:
    """ms between the parent's tool_started and tool_finished of its ``tool`` call (loop timestamps)."""
    started = next(e.ts for e in events if e.WhichOneof("event") == "tool_started" and not e.HasField("scope")
                   and e.tool_started.tool == tool)
    ended = next(e.ts for e in events if e.WhichOneof("event") == "tool_finished" and not e.HasField("scope")
                 and e.tool_finished.result.tool == tool)
    return (ended - started) * 1000


def stack_for(script: dict[str, Any], base: Path) -> tuple[FakeModelServer, LoopStack, Path]:
    work = Path(tempfile.mkdtemp(dir=base))
    (work / "ws").mkdir()
    sock_dir = Path(tempfile.mkdtemp(prefix="aicb-", dir="/tmp"))
    fake = FakeModelServer(script).start()
    config = model_config(fake.url, max_parallel_subagents=1000)
    return fake, LoopStack(sock_dir, work / "ws", fake, config, with_tools=False), sock_dir


def time_to_run_id(base: Path, runs: int) -> tuple[list[float], list[float]]:
    steps: list[dict[str, Any]] = []
    for i in range(runs):
        steps += [{"match_first_user": f"bg {i}:", "tool_calls": [{"name": "subAgent", "arguments": {
                       "task": f"child {i}: say done", "background": True}}]},
                  {"match_first_user": f"bg {i}:", "match_anywhere": '"run_id"', "text": "started"},
                  {"match_first_user": f"child {i}:", "text": "done"},
                  {"match_first_user": f"todo {i}:", "tool_calls": [{"name": "todo_write", "arguments": {
                       "add": [{"content": f"item {i}"}]}}]},
                  {"match_first_user": f"todo {i}:", "match": "item", "text": "noted"}]
    fake, stack, sock_dir = stack_for({"order": "first_match", "steps": steps}, base)
    subagent, todo = [], []
    try:
        for i in range(runs):
            sid = stack.open().session_id
            subagent.append(call_ms(run_turn(stack, sid, f"bg {i}: start a child"), "subAgent"))
            sid = stack.open().session_id
            todo.append(call_ms(run_turn(stack, sid, f"todo {i}: note it"), "todo_write"))
    finally:
        stack.close()
        fake.stop()
        shutil.rmtree(sock_dir, ignore_errors=True)
    return subagent, todo


def foreground_overhead(base: Path, runs: int) -> tuple[list[float], list[float]]:
    steps: list[dict[str, Any]] = []
    for i in range(runs):
        steps += [{"match_first_user": f"fg {i}:", "tool_calls": [{"name": "subAgent", "arguments": {
                      "task": f"child {i}: three steps"}}]},
                  {"match_first_user": f"fg {i}:", "match_anywhere": '"run_id"', "text": "ok"}]
        steps += [{"match_first_user": f"child {i}:", **s} for s in CHILD_STEPS]
        steps += [{"match_first_user": f"direct {i}:", **s} for s in CHILD_STEPS]
    fake, stack, sock_dir = stack_for({"order": "first_match", "steps": steps}, base)
    child, direct = [], []
    try:
        for i in range(runs):
            sid = stack.open().session_id
            before = len(fake.chat_requests)
            events = run_turn(stack, sid, f"fg {i}: delegate")
            child_model = sum(r.handling_ms for r in fake.chat_requests[before:]
                              if f"child {i}:" in str(r.messages[1].get("content", "")))
            child.append(call_ms(events, "subAgent") - child_model)
            sid = stack.open().session_id
            before = len(fake.chat_requests)
            events = run_turn(stack, sid, f"direct {i}: three steps")
            model = sum(r.handling_ms for r in fake.chat_requests[before:])
            duration = next(e.turn_finished.duration_ms for e in events if e.WhichOneof("event") == "turn_finished")
            direct.append(duration - model)
    finally:
        stack.close()
        fake.stop()
        shutil.rmtree(sock_dir, ignore_errors=True)
    return child, direct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="aic-bench-sub-"))
    try:
        started = time.perf_counter()
        subagent, todo = time_to_run_id(base, args.runs)
        print(f"background subAgent call -> run id: p50 {pct(subagent, 0.5):.2f} ms, p95 {pct(subagent, 0.95):.2f} ms "
              f"(target < 20 ms; baseline todo_write p50 {pct(todo, 0.5):.2f} ms, p95 {pct(todo, 0.95):.2f} ms)")
        child, direct = foreground_overhead(base, args.runs)
        extra = [c - d for c, d in zip(child, direct, strict=True)]
        print(f"foreground child of 3 steps, loop time: p50 {pct(child, 0.5):.1f} ms vs the same steps run "
              f"directly p50 {pct(direct, 0.5):.1f} ms: overhead p50 {statistics.median(extra):.1f} ms, "
              f"p95 {pct(extra, 0.95):.1f} ms per child (x{pct(child, 0.5) / max(pct(direct, 0.5), 0.001):.2f})")
        print(f"({args.runs} runs each, {time.perf_counter() - started:.1f} s)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
