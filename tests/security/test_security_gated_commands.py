"""A command the model chose runs only through the gate its bash goes through: in `run --plan` without
`--auto-approve` and without a terminal, the `verify` command the model put on its todo_write item
is not run as the acceptance proof, just as its own bash is not.

Everything is real (CLI without a terminal, supervisor, loop, tools in bwrap); the model is the fake
model server; the workspace is checked afterwards.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import Stack, cli, cli_stack
from tests.support.plan_scripts import todo

VERIFY = "echo ran > verify-ran.txt"
SCRIPT = [
    {"match": "[plan] Topic: make the file", "tool_calls": [todo(goal="make the file", add=[
        {"content": "write done.txt", "verify": VERIFY}])]},
    {"match": f"[verify: {VERIFY}]", "text": "Plan written."},
    {"match": "[plan step 1/1]", "tool_calls": [{"name": "bash", "arguments": {"command": "echo x > bash-ran.txt"}},
                                                todo(update=[{"id": "1", "status": "completed"}])]},
    {"text": "Done.", "repeat": "forever"},
]


@pytest.fixture
def stack() -> Iterator[Stack]:
    with cli_stack("aic-gate-", [{"text": "unused", "repeat": "forever"}]) as running:
        yield running


@pytest.mark.slow
def test_a_model_chosen_verify_command_does_not_run_without_approval_or_a_terminal(stack: Stack) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    stack.model.load_script(SCRIPT)
    done = cli(stack.env, "run", "--plan", "make the file", "-w", str(workspace))
    assert done.returncode != 0, done.stdout + done.stderr
    assert "[plan] step 1/1: write done.txt" in done.stdout, done.stdout + done.stderr  # the plan really ran
    assert not (workspace / "bash-ran.txt").exists()  # the model's own bash: refused (no terminal)
    assert not (workspace / "verify-ran.txt").exists(), done.stdout  # and so is its verify command
    assert "did not approve" in done.stdout + done.stderr, done.stdout + done.stderr
