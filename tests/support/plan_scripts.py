"""Fake-model scripts for /plan runs (the loop e2e tests and the CLI ones share them)."""

from __future__ import annotations

from typing import Any


def todo(*, add: list[dict[str, Any]] | None = None, update: list[dict[str, Any]] | None = None,
         goal: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if goal is not None:
        args["goal"] = goal
    if add:
        args["add"] = add
    if update:
        args["update"] = update
    return {"name": "todo_write", "arguments": args}


THREE_ITEMS = [
    {"match": "[plan] Topic: ship the files", "tool_calls": [todo(goal="ship the files", add=[
        {"content": "write a.txt"},
        {"content": "write b.txt saying ok", "verify": "grep -q ok b.txt"},
        {"content": "write c.txt"}])]},
    {"match": "[verify: grep -q ok b.txt]", "text": "Plan written."},
    # step 1: done and marked, no verify -> on-claim
    {"match": "[plan step 1/3]", "tool_calls": [{"name": "bash", "arguments": {"command": "echo a > a.txt"}},
                                                todo(update=[{"id": "1", "status": "completed"}])]},
    {"match": "[x] 1. write a.txt", "text": "Wrote a.txt."},
    # step 2: the verify fails once, one repair, then it passes -> verified
    {"match": "[plan step 2/3]", "tool_calls": [{"name": "bash", "arguments": {"command": "echo wrong > b.txt"}}]},
    {"match": "(no output)", "text": "Wrote b.txt."},
    {"match": ["[acceptance-gate]", "grep -q ok b.txt"],
     "tool_calls": [{"name": "bash", "arguments": {"command": "echo ok > b.txt"}}]},
    {"match": "(no output)", "text": "Fixed b.txt."},
    # step 3: the model stops without marking it done -> stalled
    {"match": "[plan step 3/3]", "text": "I looked at c.txt but did not write it."},
]
