"""Compaction figures, each with a baseline from the same run.

    .venv/bin/python bench/compaction.py [--runs 20] [--steps 30]

Prints:
- the pipeline's time at 1k and 10k messages without the L4 call (L3, L1, L2 and the
  fallback trim over a copy of the history), p50/p95 (target p95 < 50 ms at 10k) in the steady
  state: a session compacting again 10 steps after its previous compaction (its transcripts and
  digest memo kept, as the session's keeper keeps them), without and with a checkpoint covering
  all but the newest 300 messages (how a long session looks); then cold, a first compaction of a
  history never compacted before (L1 archives almost all of it, L2 writes ~100 bodies), next to
  the per-request cost once a state exists (checkpoint view + estimate), and a plain
  ``json.dumps`` of the same history as the baseline a request costs anyway;
- bytes sent to the model over a scripted session of N steps with ~20 KB tool outputs
  (real loop and tools services, the fake model), with compaction (context_window 32000)
  and without it (compaction.enabled: false), summary requests included;
- with ``--opencode BIN``: the same session run by OpenCode (``opencode run``) against the same
  fake model, its window set to 32000 too (OpenCode compacts by itself), for scale. Codex CLI
  cannot be measured this way: it speaks only the Responses API (``wire_api = "chat"`` was
  removed), and the fake model serves Chat Completions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]

from services.fake_model import FakeModelServer  # noqa: E402
from services.loop.compaction.feature import CompactionFeature  # noqa: E402
from services.loop.compaction.history import HistorySearchArgs  # noqa: E402
from services.loop.compaction.keeper import ContextKeeper  # noqa: E402
from services.loop.compaction.layers import Inputs  # noqa: E402
from services.loop.compaction.pipeline import compact  # noqa: E402
from services.loop.compaction.settings import CompactionSettings, budget_for  # noqa: E402
from services.loop.compaction.state import Checkpoint, CompactionState, Digests, anchor_of  # noqa: E402
from services.loop.compaction.summary import SUMMARY_MARKER  # noqa: E402
from services.loop.compaction.transcripts import Transcripts  # noqa: E402
from tests.service.loop.harness import LoopStack, model_config  # noqa: E402

BIG_OUTPUT = "head -c 15000 /dev/urandom | base64 -w 100"
FIRST_INSTRUCTION = "refactor the parser"


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def synthetic(messages: int) -> list[dict[str, Any]]:
    """A user request, then exchanges whose outputs vary in size (200 B .. 6 KB), then an answer."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "refactor the parser"}]
    n = 0
    while len(out) < messages - 1:
        cid = f"c{n}"
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "read", "arguments": json.dumps({"n": n})}}]})
        out.append({"role": "tool", "tool_call_id": cid, "content": f"{n} " + "line of output\n" * (15 + n % 400)})
        n += 1
    out.append({"role": "assistant", "content": "done"})
    return out


def more_steps(history: list[dict[str, Any]], start: int, count: int) -> list[dict[str, Any]]:
    """``count`` more exchanges appended to a copy of ``history`` (the session went on)."""
    out = list(history)
    for n in range(start, start + count):
        cid = f"m{n}"
        out += [{"role": "assistant", "content": None, "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": "read", "arguments": json.dumps({"m": n})}}]},
                {"role": "tool", "tool_call_id": cid, "content": f"m{n} " + "more output\n" * (20 + n % 300)}]
    return out


def pipeline_times(messages: int, runs: int, base: Path) -> dict[str, list[float]]:
    history = synthetic(messages)
    settings = CompactionSettings()
    budget = budget_for(settings, "m", 32_000, 4000)
    times: dict[str, list[float]] = {"pipeline": [], "steady": [], "incremental": [], "covered_steady": [],
                                     "view": [], "dumps": []}
    # A session that compacted along the way: a checkpoint covers all but the newest 300 messages.
    cut = len(history) - 300 + (1 if history[len(history) - 300]["role"] == "tool" else 0)
    covered = CompactionState(checkpoint=Checkpoint("earlier work", cut, anchor_of(history, (cut,)), (cut,)))
    state = CompactionState()

    def inputs(record: list[dict[str, Any]], transcripts: Transcripts, digests: Digests | None = None) -> Inputs:
        return Inputs(messages=record, session_id="bench", budget=budget, settings=settings,
                      transcripts=transcripts, fixed_tokens=2000, pinned=0, digests=digests or Digests())

    for run in range(runs):
        ws = base / f"ws{messages}-{run}"
        ws.mkdir()
        start = time.perf_counter()
        state = asyncio.run(compact(inputs(history, Transcripts(ws)), CompactionState(), None)).state
        times["pipeline"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        asyncio.run(compact(inputs(history, Transcripts(ws)), covered, None))
        times["incremental"].append((time.perf_counter() - start) * 1000)
        keeper = ContextKeeper(settings, budget, "bench", Transcripts(ws), state=state)
        start = time.perf_counter()
        keeper.estimates(history, 2000)
        keeper.request_history(history)
        times["view"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        json.dumps(history)
        times["dumps"].append((time.perf_counter() - start) * 1000)
    # The steady state: one session (its transcripts and digest memo, as its keeper holds them) compacting
    # again every 10 steps after its first compaction, with and without a checkpoint.
    for label, first in (("steady", CompactionState()), ("covered_steady", covered)):
        ws = base / f"ws{messages}-{label}"
        ws.mkdir()
        transcripts, digests, record = Transcripts(ws), Digests(), history
        current = asyncio.run(compact(inputs(record, transcripts, digests), first, None)).state
        for run in range(runs):
            record = more_steps(record, run * 10, 10)
            start = time.perf_counter()
            current = asyncio.run(compact(inputs(record, transcripts, digests), current, None)).state
            times[label].append((time.perf_counter() - start) * 1000)
    return times


@dataclass(frozen=True)
class SessionBytes:
    """What one scripted session sent the model, and what stayed findable."""

    sent: int
    requests: int
    summaries: int
    compactions: int
    summary_bytes: int
    last_request: int
    first_instruction_kept: bool
    """The user's first instruction byte for byte in the last request."""
    elided: int
    """Tool outputs not in the last request whole."""
    retrievable: int
    """Of those, how many ``history_search`` finds (a slice of each from its middle as the query)."""


def session_bytes(base: Path, steps: int, enabled: bool, window: int | None = 32_000) -> SessionBytes:
    """One scripted session of ``steps`` bash calls printing ~20 KB each (``window``: the model's
    context window, None for the default)."""
    work = Path(tempfile.mkdtemp(dir=base))
    (work / "ws").mkdir()
    sock_dir = Path(tempfile.mkdtemp(prefix="aicc-", dir="/tmp"))
    script = {"order": "first_match", "steps": [
        {"match": SUMMARY_MARKER, "text": "Goal: refactor the parser. Done: ran the command.", "repeat": "forever"},
        {"tool_calls": [{"name": "bash", "arguments": {"command": BIG_OUTPUT}}], "repeat": steps},
        {"text": "finished"}]}
    with FakeModelServer(script) as fake:
        config = model_config(fake.url, max_tool_iterations=steps + 5, duplicate_call_threshold=0)
        config["models"]["fake"].update(max_tokens=4000, **({"context_window": window} if window else {}))
        config["compaction"] = {"enabled": enabled}
        stack = LoopStack(sock_dir, work / "ws", fake, config, with_tools=True)
        try:
            sid, events = stack.turn(FIRST_INSTRUCTION)
            rt = stack.runtime.sessions[sid]
            outputs = [(i, str(m["content"])) for i, m in enumerate(rt.session.messages) if m.get("role") == "tool"]
            last = json.dumps(fake.chat_requests[-1].body)
            elided = [(i, o) for i, o in outputs if json.dumps(o)[1:-1] not in last]
            keeper = rt.feature(CompactionFeature).keeper
            found = sum(_findable(keeper, i, o) for i, o in elided)
        finally:
            stack.close()
            shutil.rmtree(sock_dir, ignore_errors=True)
        chat = fake.chat_requests
        sent = sum(len(json.dumps(r.body)) for r in chat)
        summaries = sum(SUMMARY_MARKER in r.last_message for r in chat)
        compactions = sum(e.WhichOneof("event") == "compaction_ended" for e in events)
        summary_bytes = sum(len(json.dumps(r.body)) for r in chat if SUMMARY_MARKER in r.last_message)
    return SessionBytes(sent, len(chat), summaries, compactions, summary_bytes, len(last),
                        FIRST_INSTRUCTION in last, len(elided), found)


def _findable(keeper: ContextKeeper, index: int, output: str) -> bool:
    """Does history_search (this session's archive) find message ``index`` first, asked for a line
    from the middle of its output?"""
    lines = output.splitlines()
    hit = keeper.history_search("bench", HistorySearchArgs(lines[len(lines) // 2], 1))
    return hit.ok and hit.data.get("hits") == [index]


def opencode_bytes(base: Path, steps: int, binary: str) -> tuple[int, int, int, int]:
    """(bytes sent, requests, summary requests, bash calls run) for the same session run by OpenCode."""
    home, ws = base / "oc-home", base / "oc-ws"
    (home / ".config" / "opencode").mkdir(parents=True)
    ws.mkdir()
    summary_match = "Here is the conversation so far"  # OpenCode's own compaction request
    script = {"order": "first_match", "steps": [
        {"match": summary_match, "text": "## Goal\n- run the command\n## Progress\n- ran it", "repeat": "forever"},
        {"tool_calls": [{"name": "bash", "arguments": {"command": BIG_OUTPUT}}], "repeat": steps + 1},
        {"text": "finished", "repeat": "forever"}]}
    with FakeModelServer(script) as fake:
        (home / ".config" / "opencode" / "opencode.json").write_text(json.dumps({"provider": {"fake": {
            "npm": "@ai-sdk/openai-compatible", "name": "fake", "options": {"baseURL": fake.url, "apiKey": "k"},
            "models": {"fake-model": {"name": "fake", "limit": {"context": 32_000, "output": 4000}}}}}}))
        env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
               "XDG_DATA_HOME": str(home / ".local/share"), "XDG_CACHE_HOME": str(home / ".cache")}
        subprocess.run([binary, "run", "-m", "fake/fake-model", f"Run the output command {steps} times, one call "
                        "at a time."], cwd=ws, env=env, capture_output=True, timeout=900, check=False)
        chat = fake.chat_requests
        sent = sum(len(json.dumps(r.body)) for r in chat)
        summaries = sum(summary_match in r.last_message for r in chat)
        calls = sum(1 for r in chat if r.body.get("tools") and r.step == 1)  # the title request has no tools
    return sent, len(chat), summaries, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--opencode", default="", help="an `opencode` binary to run the same session with")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="aic-bench-compaction-"))
    try:
        for size in (1_000, 10_000):
            t = pipeline_times(size, args.runs, base)
            print(f"pipeline at {size:>6} messages (no L4), steady state (the session compacting again 10 steps "
                  f"after its last compaction): p50 {statistics.median(t['steady']):6.1f} ms  "
                  f"p95 {pct(t['steady'], 0.95):6.1f} ms   target p95 < 50 ms at 10k")
            print(f"  the same with a checkpoint covering all but the newest 300: "
                  f"p50 {statistics.median(t['covered_steady']):6.1f} ms  p95 {pct(t['covered_steady'], 0.95):6.1f} ms")
            print(f"  cold, a first compaction of a never-compacted history (archives ~all, writes every body): "
                  f"p50 {statistics.median(t['pipeline']):6.1f} ms  p95 {pct(t['pipeline'], 0.95):6.1f} ms; "
                  f"cold with that checkpoint: p50 {statistics.median(t['incremental']):6.1f} ms  "
                  f"p95 {pct(t['incremental'], 0.95):6.1f} ms")
            print(f"  per request with a state (view + estimate): p50 {statistics.median(t['view']):5.2f} ms  "
                  f"p95 {pct(t['view'], 0.95):5.2f} ms   baseline json.dumps(history): "
                  f"p50 {statistics.median(t['dumps']):6.1f} ms")
        for window in (None, 32_000):
            with_c = session_bytes(base, args.steps, True, window)
            without = session_bytes(base, args.steps, False, window)
            print(f"{args.steps}-step session, ~20 KB outputs, context_window {window or 'default (128000)'}:")
            print(f"  with compaction:    {with_c.sent / 1e6:7.2f} MB in {with_c.requests} requests "
                  f"({with_c.summaries} summary requests, {with_c.summary_bytes / 1e6:.2f} MB of them; "
                  f"{with_c.compactions} compactions){'   target < 1.70 MB' if window is None else ''}")
            print(f"    last request {with_c.last_request / 1e3:.0f} KB; the first instruction in it: "
                  f"{'yes' if with_c.first_instruction_kept else 'NO'}; elided outputs history_search "
                  f"finds: {with_c.retrievable} of {with_c.elided}")
            print(f"  without compaction: {without.sent / 1e6:7.2f} MB in {without.requests} requests")
            print(f"  ratio with/without: {with_c.sent / without.sent:.2f}")
        if args.opencode:
            oc = opencode_bytes(base, args.steps, args.opencode)
            print(f"  OpenCode:           {oc[0] / 1e6:7.2f} MB in {oc[1]} requests ({oc[2]} summary requests, "
                  f"{oc[3]} bash calls run)   ours/OpenCode: {with_c.sent / oc[0]:.2f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
