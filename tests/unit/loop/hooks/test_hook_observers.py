"""Observe-only points fed by other parts: compaction events run compact.before / compact.after hooks."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from services.loop.core.events import Event
from services.loop.core.turn_events import CompactionEnded, CompactionStarted, EventBody, HookRun
from services.loop.hooks.config import parse_hooks
from services.loop.hooks.engine import HookEngine
from services.loop.hooks.observers import ObservingHooks


def test_compaction_events_run_the_compact_hooks_with_their_figures(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    script = tmp_path / "hook.py"
    script.write_text(f"import sys\nopen({str(log)!r}, 'a').write(sys.stdin.readline())\n")
    argv = [sys.executable, str(script)]
    settings, _ = parse_hooks({"events": [{"name": "pre", "point": "compact.before", "command": argv},
                                          {"name": "post", "point": "compact.after", "command": argv}]})
    emitted: list[EventBody] = []

    async def run() -> None:
        hooks = ObservingHooks(HookEngine(settings, "s1", str(tmp_path)), emitted.append)
        hooks.on_event(Event(1, "s1", 1, 0.0, CompactionStarted(estimated_tokens=9000, reason="ceiling")))
        hooks.on_event(Event(2, "s1", 1, 0.0, CompactionEnded(layers=[], estimated_before=9000, estimated_after=3000)))
        while hooks._tasks:
            await asyncio.sleep(0.02)

    asyncio.run(run())
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted((s["point"], s.get("estimated_tokens"), s.get("estimated_after")) for s in seen) == [
        ("compact.after", None, 3000), ("compact.before", 9000, None)]
    assert sorted(e.hook for e in emitted if isinstance(e, HookRun)) == ["post", "pre"]
