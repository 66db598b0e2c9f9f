"""Each exit code of a blocking tool.before hook, in both formats, through the real loop and tools
services: what runs, what is refused, and that the line shown says which (docs/hooks.md).

Claude Code's format follows Claude Code: 0 reads the answer, 2 blocks, any other code (1, 126, 127,
137, killed by a signal) is a non-blocking error: shown, and the call goes on. Ours fails closed on
any non-zero exit. In both, stdout that opens a JSON object and does not parse refuses the call.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace

__all__ = ["fake", "make_stack", "workspace"]

ANSWERS = {
    "0": "sys.exit(0)",
    "1": "print('boom', file=sys.stderr); sys.exit(1)",
    "2": "print('not this one', file=sys.stderr); sys.exit(2)",
    "126": "sys.exit(126)",
    "127": "sys.exit(127)",
    "137": "sys.exit(137)",
    "killed": "os.kill(os.getpid(), signal.SIGKILL)",
    "garbled": "print('{\"decision\": \"block\", \"reason\": oops')",
}
# (format, answer) -> does the call run?
CLAUDE_RUNS = {"0": True, "1": True, "2": False, "126": True, "127": True, "137": True, "killed": True,
               "garbled": False}
OURS_RUNS = {"0": True, "garbled": False}  # any other exit refuses


def _hooks(fmt: str, argv: str) -> dict[str, Any]:
    if fmt == "claude":
        return {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": argv}]}]}
    return {"events": [{"name": "guard", "point": "tool.before", "capabilities": ["block"], "matcher": "bash",
                        "command": argv.split()}]}


@pytest.mark.parametrize("fmt", ["claude", "ours"])
@pytest.mark.parametrize("answer", list(ANSWERS))
def test_a_blocking_hooks_exit_code_decides_as_documented_and_the_line_says_so(
        make_stack: Callable[..., LoopStack], workspace: Path, tmp_path: Path, fmt: str, answer: str) -> None:
    hook = tmp_path / "hook.py"
    hook.write_text(textwrap.dedent(f"""
        import os, signal, sys
        sys.stdin.read()
        {ANSWERS[answer]}
        """))
    stack = make_stack({"order": "first_match", "steps": [
        {"match": "go", "tool_calls": [{"name": "bash", "arguments": {"command": "echo ran > ran.txt"}}]},
        {"match_first_user": "go", "text": "done", "repeat": "forever"},
    ]}, with_tools=True, sections={"hooks": _hooks(fmt, f"{sys.executable} {hook}")})
    _, events = stack.turn("go")
    assert status_name(finished(events)) == "completed"
    runs = (CLAUDE_RUNS if fmt == "claude" else OURS_RUNS).get(answer, False)
    [result] = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"]
    assert (workspace / "ran.txt").exists() is runs, (result.output, result.error.message)
    degraded = [e.degraded.reason for e in events if e.WhichOneof("event") == "degraded"]
    if runs:
        assert result.ok, result.error.message
        if answer != "0":  # the failure is shown, and says the call went on
            assert any("non-blocking error: the call goes on" in r for r in degraded), degraded
    else:
        assert not result.ok and result.error.code == "blocked_by_hook", result.error
        assert "non-blocking" not in result.error.message  # never "non-blocking" on a refusal
        if answer == "garbled":
            said = "does not parse" if fmt == "claude" else "is not one JSON line"
            assert said in result.error.message, result.error.message
