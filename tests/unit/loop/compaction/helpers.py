"""Histories and inputs for the compaction tests (plain data; the only server is the fake model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.loop.compaction.layers import Inputs
from services.loop.compaction.settings import Budget, CompactionSettings, budget_for
from services.loop.compaction.transcripts import Transcripts

Message = dict[str, Any]


def exchange(n: int, output: str, name: str = "bash") -> list[Message]:
    """One assistant call and its result."""
    call = f"call_{n}"
    return [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": call, "type": "function", "function": {"name": name, "arguments": f'{{"n": {n}}}'}}]},
        {"role": "tool", "tool_call_id": call, "content": output},
    ]


def history(steps: int, output_chars: int = 2000, request: str = "fix the parser") -> list[Message]:
    """A user request, ``steps`` tool exchanges with distinct outputs, and a final answer."""
    messages: list[Message] = [{"role": "user", "content": request}]
    for n in range(steps):
        body = f"output {n} " + ("abcdefghij\n" * (output_chars // 11 + 1))[:output_chars]
        messages += exchange(n, body)
    messages.append({"role": "assistant", "content": "done"})
    return messages


def inputs(messages: list[Message], workspace: Path, *, window: int = 32000, settings: CompactionSettings | None = None,
           fixed: int = 500, pinned: int = 0, budget: Budget | None = None) -> Inputs:
    s = settings or CompactionSettings(keep_recent_tool_results=30, keep_recent_tool_tokens=10**9)  # L2 alone is not enough here
    return Inputs(messages=messages, session_id="s1", budget=budget or budget_for(s, "m", window, 4000),
                  settings=s, transcripts=Transcripts(workspace), fixed_tokens=fixed, pinned=pinned)
