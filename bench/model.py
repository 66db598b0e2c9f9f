"""Model engine overhead: our client vs the bare openai package, against the fake model.

Prints, per step (p50 / p95, milliseconds):
- wall time of OpenAIModelClient.step and of a bare ``AsyncOpenAI`` streaming loop
  over the same scripted reply (text + a split tool call + usage);
- each minus the fake model's own handling time (its ``handling_ms``), i.e. the
  client-side cost, and the ratio ours / bare;
- the prefix-ratio fallback at 1 MB and 10 MB requests (paid only when the
  endpoint reports no cache figure).

Run: .venv/bin/python bench/model.py [--steps 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai

from services.fake_model import FakeModelServer
from services.loop.model.client import OpenAIModelClient
from services.loop.model.settings import ModelSettings
from services.loop.model.usage import prefix_ratio

STEP = {"text": "I will read the file and then fix the bug in the parser. " * 4, "chunk_chars": 12,
        "tool_calls": [{"name": "read", "arguments": {"path": "src/parser.py", "offset": 0, "limit": 200}}],
        "repeat": "forever"}
MESSAGES = [{"role": "system", "content": "You are a coding agent. " * 200},
            {"role": "user", "content": "fix the failing test in the parser"}]
TOOLS = [{"type": "function", "function": {"name": n, "description": "d" * 200, "parameters": {"type": "object"}}}
         for n in ("read", "write", "edit", "bash", "glob", "grep")]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


LONG_HISTORY = [MESSAGES[0]] + [{"role": ("assistant", "user")[n % 2], "content": "some content line " * 30}
                                for n in range(400)]


async def interleaved(url: str, steps: int, messages: list[dict[str, Any]] = MESSAGES) -> tuple[list[float], list[float]]:
    """Alternate one bare step and one step of ours so machine load hits both alike."""
    ours = OpenAIModelClient(ModelSettings(name="fake", model="fake-model", provider="generic", base_url=url,
                                           api_key="k"))
    bare = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0)

    async def bare_step() -> None:
        request: dict[str, Any] = {"model": "fake-model", "messages": messages, "tools": TOOLS, "stream": True,
                                   "stream_options": {"include_usage": True}}
        stream: Any = await bare.chat.completions.create(**request)
        async for _chunk in stream:
            pass

    async def our_step() -> None:
        await ours.step(messages, TOOLS, on_text=lambda _t: None, on_reasoning=lambda _t: None, timeout_seconds=30)

    times: tuple[list[float], list[float]] = ([], [])
    for n in range(steps * 2):
        start = time.perf_counter()
        await (bare_step() if n % 2 == 0 else our_step())
        times[n % 2].append((time.perf_counter() - start) * 1000)
    await ours.close()
    await bare.close()
    return times


def compare(title: str, steps: int, messages: list[dict[str, Any]]) -> None:
    with FakeModelServer([STEP]) as server:
        asyncio.run(interleaved(server.url, 3, messages))  # warm-up
        server.reset()
        bare_wall, our_wall = asyncio.run(interleaved(server.url, steps, messages))
        served = [r.handling_ms for r in server.chat_requests]
    bare_side = [w - s for w, s in zip(bare_wall, served[0::2], strict=True)]
    our_side = [w - s for w, s in zip(our_wall, served[1::2], strict=True)]
    print(f"{title}: {steps} steps each, interleaved (ms)")
    for name, wall, side in (("bare openai", bare_wall, bare_side), ("OpenAIModelClient", our_wall, our_side)):
        print(f"  {name:<18} wall p50 {pct(wall, .5):7.2f}  p95 {pct(wall, .95):7.2f}   "
              f"client-side p50 {pct(side, .5):7.2f}  p95 {pct(side, .95):7.2f}")
    ratio = statistics.median(our_side) / statistics.median(bare_side)
    print(f"  client-side ratio ours/bare (p50): {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    steps = parser.parse_args().steps
    compare("2-message request", steps, MESSAGES)
    compare("401-message history (~220 KB)", max(steps // 10, 10), LONG_HISTORY)
    for size in (1_000_000, 10_000_000):
        prev = os.urandom(size)
        this = prev + b"x" * 2000
        start = time.perf_counter()
        for _ in range(5):
            prefix_ratio(prev, this)
        print(f"prefix_ratio fallback at {size // 1_000_000:>2} MB: {(time.perf_counter() - start) / 5 * 1000:6.2f} ms")


if __name__ == "__main__":
    main()
