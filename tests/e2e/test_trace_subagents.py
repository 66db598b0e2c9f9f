"""The trace export of a session with a foreground and a background subagent: both runs are in it,
each with its real status, model steps and tokens (the background one ended after its parent's turn).
The real loop and tools services; the fake model answers the parent and each child apart."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.test_subagents import PARENT, child, parent_calls, script
from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace

__all__ = ["fake", "make_stack", "workspace"]

FOREGROUND, BACKGROUND = "foreground: read notes.txt", "background: summarise"
USAGE = {"prompt_tokens": 700, "completion_tokens": 7, "cached_tokens": 0}


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span.get("attributes", [])}


def test_the_trace_export_has_both_children_with_their_status_steps_and_tokens(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    (workspace / "notes.txt").write_text("alpha\n")
    stack = make_stack(script(
        parent_calls({"task": FOREGROUND, "name": "reader"}, {"task": BACKGROUND, "name": "bg", "background": True}),
        child(FOREGROUND, {"usage": USAGE, "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
              {"usage": USAGE, "match": "alpha", "text": "It says alpha."}),
        child(BACKGROUND, {"usage": USAGE, "text": "Summary done.", "delay_ms": 1500}),
    ), with_tools=True)
    sid = stack.open().session_id
    turn = stack.start(sid, f"{PARENT}: one in front, one behind")
    events = []
    for event in turn:
        events.append(event)
        if event.WhichOneof("event") == "background_task_done":
            break
    assert status_name(finished(events)) == "completed"
    assert [e.WhichOneof("event") for e in events].index("turn_finished") < len(events) - 1  # bg ended after

    done = subprocess.run([sys.executable, "-m", "clients.cli.entry", "trace", "export", "--session", sid,
                           "--format", "otlp-json", "-w", str(workspace)], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
    spans = json.loads(done.stdout)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    runs = {_attrs(s)["ai_coding.scope"]: _attrs(s) for s in spans if s["name"] == "invoke_agent subagent"}
    assert len(runs) == 2, [s["name"] for s in spans]
    by_steps = sorted(runs.values(), key=lambda a: int(a["ai_coding.iterations"]))
    background, foreground = by_steps
    assert foreground["ai_coding.turn.status"] == "completed" and int(foreground["ai_coding.iterations"]) == 2
    assert int(foreground["gen_ai.usage.input_tokens"]) == 1400 and int(foreground["gen_ai.usage.output_tokens"]) == 14
    assert background["ai_coding.turn.status"] == "completed" and int(background["ai_coding.iterations"]) == 1
    assert int(background["gen_ai.usage.input_tokens"]) == 700 and int(background["gen_ai.usage.output_tokens"]) == 7
