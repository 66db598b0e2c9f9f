"""Enter to first rendered token, and who spends it, with baselines measured in the same run.

    .venv/bin/python bench/client.py [--runs N]

Three measurements of the same fake-model reply (its first content chunk is the token),
each the median and p95 of N turns:

- model:  a raw streaming HTTP request to the fake model until the first content chunk
          (the floor: what any client pays for the model itself);
- loop:   a gRPC ConverseBatched Start on the loop service until the first text_delta event
          (model + the loop's turn start: session, prompt assembly, memory recall, ...);
- repl:   the real REPL in a pseudo-terminal: from writing Enter to the pty until the
          token's bytes come out of it (everything a user sees).

client share = repl - loop; loop share = loop - model; target: client + loop < 50 ms.
Also prints the renderer's own cost per text delta (in-process, no terminal).
Everything runs in a private HOME and runtime dir.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]

TOKEN = "QZXtoken"
REPLY = f"{TOKEN} and the rest of a short answer."


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_model(url: str, runs: int) -> list[float]:
    """Raw streaming requests to the fake model: seconds to the first content chunk."""
    body = json.dumps({"model": "fake-model", "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    times = []
    for _ in range(runs):
        request = urllib.request.Request(f"{url}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json", "Authorization": "Bearer x"})
        start = time.perf_counter()
        with urllib.request.urlopen(request, timeout=30) as response:
            for raw in response:
                if TOKEN.encode() in raw or (b'"content"' in raw and b'"content": ""' not in raw):
                    times.append(time.perf_counter() - start)
                    break
            for _ in response:
                pass
    return times


class LoopTurns:
    """Turns started over gRPC by a bare client: Start until the first text_delta."""

    def __init__(self, env: dict[str, str], workspace: Path) -> None:
        import grpc
        from ai_coding.v1 import loop_pb2, loop_pb2_grpc

        from services.kernel.channels import sync_channel
        from services.kernel.endpoints import Endpoint

        self.pb = loop_pb2
        sock = Path(env["AI_CODING_RUNTIME_DIR"]) / "loop.sock"
        self.channel = sync_channel(Endpoint("loop", "unix", path=str(sock)))
        grpc.channel_ready_future(self.channel).result(timeout=10)
        self.stub = loop_pb2_grpc.AgentLoopStub(self.channel)
        self.session = self.stub.OpenSession(
            loop_pb2.OpenSessionLoopRequest(workspace=str(workspace), interactive=True), timeout=10).session_id

    def turn(self) -> float:
        first = self.pb.ClientMessage(start=self.pb.StartTurn(session_id=self.session, input="hello"))
        start = time.perf_counter()
        got = None
        done = False
        for batch in self.stub.ConverseBatched(iter([first]), timeout=60):
            for event in batch.events:
                kind = event.WhichOneof("event")
                if kind == "text_delta" and got is None:
                    got = time.perf_counter() - start
                done = done or kind == "turn_finished"
            if done:
                break
        assert got is not None, "no text_delta in the turn"
        return got


class AioTurns:
    """The REPL's own gRPC client (``LoopClient``, grpc.aio) without a terminal: Start to first text_delta."""

    def __init__(self, env: dict[str, str], workspace: Path) -> None:
        import asyncio

        from clients.cli.connection.loop import LoopClient
        from services.kernel.endpoints import Endpoint

        self.loop = asyncio.new_event_loop()
        sock = Path(env["AI_CODING_RUNTIME_DIR"]) / "loop.sock"
        self.client = self.loop.run_until_complete(self._make(LoopClient, Endpoint("loop", "unix", path=str(sock))))
        self.session = self.loop.run_until_complete(self.client.open_session(str(workspace))).session_id

    @staticmethod
    async def _make(factory: Any, endpoint: Any) -> Any:
        return factory(endpoint)

    async def _turn(self) -> float:
        from clients.cli import views

        start = time.perf_counter()
        stream = self.client.start(self.session, "hello")
        got = None
        async for event in stream.events():
            if isinstance(event.body, views.TextDelta) and got is None:
                got = time.perf_counter() - start
            if isinstance(event.body, views.TurnFinished):
                break
        stream.close()
        assert got is not None
        return got

    def turn(self) -> float:
        return float(self.loop.run_until_complete(self._turn()))


class ReplTurns:
    """Turns typed into the real REPL in a pty: Enter until the token's bytes come out."""

    def __init__(self, env: dict[str, str], workspace: Path) -> None:
        import pexpect

        self.pexpect = pexpect
        self.child = pexpect.spawn(sys.executable, ["-m", "clients.cli.repl", "-w", str(workspace)], env=env,
                                   cwd=str(workspace), encoding="utf-8", dimensions=(40, 120), timeout=60)
        # pexpect sleeps 50 ms before every send by default: that would be counted as client time.
        self.child.delaybeforesend = None
        self.child.expect_exact("/help for commands")
        time.sleep(0.5)
        self.count = 0
        self.sent_wall: dict[str, float] = {}
        self.seen_wall: dict[str, float] = {}

    def turn(self) -> float:
        self.count += 1
        self.child.send(f"question {self.count}")
        self.child.expect_exact(f"question {self.count}")
        time.sleep(0.05)
        self.sent_wall[f"question {self.count}"] = time.time()
        start = time.perf_counter()
        self.child.send("\r")
        self.child.expect_exact(TOKEN)
        took = time.perf_counter() - start
        self.seen_wall[f"question {self.count}"] = time.time()
        self.child.expect_exact("● ")
        return took

    def close(self) -> None:
        self.child.sendcontrol("d")
        self.child.expect(self.pexpect.EOF)


def bench_renderer(deltas: int = 20_000) -> float:
    """Microseconds the client spends per text delta: converting it from the wire and rendering it
    (line-buffered, as in the REPL)."""
    from ai_coding.v1 import loop_pb2
    from rich.console import Console

    from clients.cli.convert import event as view_of
    from clients.cli.render import EventRenderer

    renderer = EventRenderer(Console(file=io.StringIO(), width=120, force_terminal=True), line_buffered=True)
    events = [loop_pb2.TurnEvent(seq=i + 1, text_delta=loop_pb2.TextDelta(text="word " if i % 12 else "end\n"))
              for i in range(deltas)]
    start = time.perf_counter()
    for event in events:
        renderer.handle(view_of(event))
    return (time.perf_counter() - start) / deltas * 1e6


def main() -> None:
    """Start a private stack, run the interleaved measurements, print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    from services.fake_model import FakeModelServer

    base = Path(tempfile.mkdtemp(prefix="aic-bench-", dir="/tmp"))
    os.chmod(base, 0o700)
    home = base / "home"
    (home / ".config").mkdir(parents=True)
    workspace = base / "ws"
    workspace.mkdir()
    model = FakeModelServer([{"text": REPLY, "repeat": "forever", "usage": {"prompt_tokens": 100,
                                                                          "completion_tokens": 8}}]).start()
    config = base / "config.yaml"
    config.write_text(f"models:\n  default: {{provider: generic, model: fake-model, base_url: '{model.url}', "
                      "api_key: x}\nloop: {harvest: false}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_CODING_", "OPENAI_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               AI_CODING_RUNTIME_DIR=str(base / "run"), AI_CODING_CONFIG=str(config), PROMPT_TOOLKIT_NO_CPR="1",
               TERM="xterm-256color")
    cli = [sys.executable, "-m", "clients.cli.main"]
    subprocess.run([*cli, "up"], env=env, check=True, capture_output=True, timeout=120)
    try:
        timings = base / "client-timings.jsonl"
        loop, repl = LoopTurns(env, workspace), ReplTurns({**env, "AI_CODING_CLIENT_TIMINGS": str(timings)}, workspace)
        aio = AioTurns(env, workspace)
        loop.turn(), aio.turn(), repl.turn()  # warm-up: imports, session files, channels
        model_t, loop_t, aio_t, repl_t = [], [], [], []
        # Interleaved, so the loop and the REPL see the same machine load and history length.
        for _ in range(args.runs):
            model_t += bench_model(model.url, 1)
            loop_t.append(loop.turn())
            aio_t.append(aio.turn())
            repl_t.append(repl.turn())
            time.sleep(0.1)
        repl.close()
        repl_sent, repl_seen = repl.sent_wall, repl.seen_wall
        own = [row for row in map(json.loads, timings.read_text().splitlines()) if row["line"] != "question 1"]
        per_delta_us = bench_renderer()
    finally:
        subprocess.run([*cli, "down"], env=env, capture_output=True, timeout=60)
        model.stop()
        shutil.rmtree(base, ignore_errors=True)

    def row(name: str, values: list[float]) -> None:
        print(f"  {name:<34} p50 {statistics.median(values) * 1000:7.1f} ms   p95 {pct(values, 0.95) * 1000:7.1f} ms")

    print(f"Enter to first rendered token ({args.runs} turns each, fake model, same run)")
    row("model alone (HTTP, first chunk)", model_t)
    row("loop (gRPC Start -> text_delta)", loop_t)
    row("repl's gRPC client, no terminal", aio_t)
    row("repl (Enter in a pty -> token out)", repl_t)
    m, lp, r = (statistics.median(v) * 1000 for v in (model_t, loop_t, repl_t))
    print(f"  loop share   (loop - model)   {lp - m:7.1f} ms")
    print(f"  client share (repl - loop)    {r - lp:7.1f} ms")
    print(f"  client + loop (repl - model)  {r - m:7.1f} ms   target < 50 ms: {'met' if r - m < 50 else 'MISSED'}")
    pty_in = [row["key_wall"] - repl_sent[row["line"]] for row in own]
    pty_out = [repl_seen[row["line"]] - row["drawn_wall"] for row in own]
    key_send = [row["key_to_send"] / 1000 for row in own]
    event_draw = [row["event_to_draw"] / 1000 for row in own]
    print("  the client's own work, timed inside the REPL (AI_CODING_CLIENT_TIMINGS):")
    row("Enter handled -> Start sent", key_send)
    row("first text_delta -> redrawn", event_draw)
    row("sum", [a + b for a, b in zip(key_send, event_draw, strict=True)])
    row("(Start sent -> first text_delta in)", [r["send_to_event"] / 1000 for r in own])
    print("  the terminal around it (wall clock, same machine):")
    row("pty write of Enter -> key handler", pty_in)
    row("redraw -> token read from the pty", pty_out)
    print(f"  renderer cost per text delta  {per_delta_us:7.1f} us (in-process, line-buffered)")


if __name__ == "__main__":
    main()
