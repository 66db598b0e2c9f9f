"""A child session (subagent, plan step) meets the parent's hooks with injected context of its own:
it never takes the text a parent's tool.after hook queued for the parent's next request, and what
its own calls inject goes to its own next request, not the parent's."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from services.loop.core.domain import ToolCall, ToolOutcome
from services.loop.core.turn_events import EventBody, HookRun
from services.loop.hooks.config import parse_hooks
from services.loop.hooks.engine import HookEngine
from services.loop.policy.codes import ErrorCode
from services.loop.subagents.child import ChildHooks


def test_a_childs_hooks_keep_their_injected_context_apart_from_the_parents(tmp_path: Path) -> None:
    script = tmp_path / "ctx.py"
    script.write_text("import json, sys\nevent = json.loads(sys.stdin.readline())\n"
                      "print(json.dumps({'context': 'seen ' + event['arguments']['command']}))\n")
    settings, problems = parse_hooks({"events": [{"name": "ctx", "point": "tool.after", "capabilities": ["inject"],
                                                  "command": [sys.executable, str(script)]}]})
    assert problems == []
    emitted: list[EventBody] = []

    async def run() -> tuple[str, str, str]:
        parent = HookEngine(settings, "s1", str(tmp_path))
        await parent.turn_start(1, "go", emitted.append)
        failed = ToolOutcome.error("c1", "bash", ErrorCode.TOOL_TIMEOUT, "no")
        await parent.tool_after(ToolCall("c1", "bash", json.dumps({"command": "parent-cmd"})), failed, emitted.append)
        child = ChildHooks(parent)
        await child.tool_after(ToolCall("c2", "bash", json.dumps({"command": "child-cmd"})), failed, emitted.append)
        child_context = await child.step_before(1, 1, emitted.append)
        parent_context = await parent.step_before(1, 2, emitted.append)
        return child_context, parent_context, await parent.step_before(1, 3, emitted.append)

    child_context, parent_context, after = asyncio.run(run())
    assert child_context == "seen child-cmd"
    assert parent_context == "seen parent-cmd"
    assert after == ""  # said once
    assert [e.hook for e in emitted if isinstance(e, HookRun)] == ["ctx", "ctx"]
