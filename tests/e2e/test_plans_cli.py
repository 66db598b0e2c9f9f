"""/plan and run --plan from the real CLI (processes, a pseudo-terminal for the REPL) against the fake model."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

from tests.e2e.test_repl_session import Term, plain  # noqa: E402
from tests.support.cli_stack import Stack, cli, cli_stack  # noqa: E402
from tests.support.plan_scripts import THREE_ITEMS  # noqa: E402


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-plan-", [{"text": "unused", "repeat": "forever"}]) as running:
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Path:
    return Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))


def test_run_plan_prints_each_step_block_and_exits_non_zero_for_the_stalled_item(
        stack: Stack, workspace: Path) -> None:
    stack.model.load_script(THREE_ITEMS)
    done = cli(stack.env, "run", "--plan", "ship the files", "--auto-approve", "-w", str(workspace))
    assert done.returncode == 7, done.stdout + done.stderr
    out = done.stdout
    headers = [line for line in out.splitlines() if line.startswith("[plan] step ")]
    assert headers == ["[plan] step 1/3: write a.txt", "[plan] step 2/3: write b.txt saying ok",
                       "[plan] step 3/3: write c.txt"]
    assert "✓ done · proof: on-claim" in out and "✓ done · proof: verified · 2 attempts" in out
    assert "… stalled · proof: n/a" in out
    assert "[acceptance] ✗ va2" not in out and "[acceptance] ✗ v2" in out and "[acceptance] ✓ v2" in out
    assert "without proof: 1, 3" in out
    assert "plan incomplete (plan incomplete: 3 (stalled))" in out
    assert stack.model.errors == []


def test_run_plan_json_has_the_receipts_and_a_topic_outside_the_workspace_is_refused_without_a_model_call(
        stack: Stack, workspace: Path) -> None:
    stack.model.load_script([{"text": "never asked", "repeat": "forever"}])
    before = len(stack.model.chat_requests)
    refused = cli(stack.env, "run", "--plan", "copy /etc/passwd here", "--auto-approve", "-w", str(workspace))
    assert refused.returncode == 2, refused.stdout + refused.stderr  # bad input: nothing ran
    assert "outside the workspace: /etc/passwd" in refused.stderr
    assert len(stack.model.chat_requests) == before


def test_the_repl_asks_for_a_topic_runs_the_plan_and_resume_replays_the_receipts(
        stack: Stack, workspace: Path) -> None:
    stack.model.load_script(THREE_ITEMS)
    term = Term(stack, workspace)
    try:
        term.line("/permissions auto")
        term.expect("permissions: auto")
        term.line("/plan")
        term.expect("What should I plan?")
        term.line("ship the files")
        out = term.expect("● plan incomplete")
        text = plain(out)
        assert text.index("[plan] step 1/3: write a.txt") < text.index("Wrote a.txt.") < text.index(
            "[plan] step 2/3") < text.index("✓ done · proof: verified") < text.index("[plan] step 3/3")
    finally:
        term.close()
    listed = json.loads(cli(stack.env, "sessions", "list", "--json", "-w", str(workspace)).stdout)
    again = Term(stack, workspace, "--session", listed[0]["id"])
    try:
        shown = plain(again.seen + again.expect("── end of history ──"))
        for line in ("[plan] step 1/3: write a.txt", "[plan] step 2/3: write b.txt saying ok",
                     "[plan] step 3/3: write c.txt", "✓ done · proof: on-claim", "✓ done · proof: verified",
                     "… stalled · proof: n/a"):
            assert line in shown, shown[-2000:]
    finally:
        again.close()


def test_the_repl_shows_each_verdict_and_run_exits_7_when_the_gate_still_fails(
        stack: Stack, workspace: Path) -> None:
    stack.model.load_script([
        {"match": "make the marker", "text": "Done already."},
        {"match": "[acceptance-gate]", "tool_calls": [{"name": "bash", "arguments": {"command": "touch marker.txt"}}]},
        {"match": "(no output)", "text": "Now it is there."},
    ])
    term = Term(stack, workspace)
    try:
        term.line('/accept "the marker exists" -- test -f marker.txt')
        term.expect("added a1")
        term.line("/permissions auto")
        term.expect("permissions: auto")
        term.line("make the marker")
        text = plain(term.expect("● completed"))
        term.expect("\n")
        assert "[acceptance] ✗ a1 the marker exists · `test -f marker.txt` · exit 1" in text
        assert "uncertain: verify failed: `test -f marker.txt` (a1)" in text
        assert "[acceptance] ✓ a1 the marker exists" in plain(term.seen)
        assert "completed (acceptance verified)" in plain(term.seen)
    finally:
        term.close()
    (workspace / "marker.txt").unlink()
    stack.model.load_script([{"match": "", "text": "Nothing to do.", "repeat": 3}])
    done = cli(stack.env, "run", "-c", "check again", "--auto-approve", "-w", str(workspace))
    assert done.returncode == 7, done.stdout + done.stderr
    assert "acceptance failed (acceptance failed: `test -f marker.txt` exited 1)" in done.stdout
    assert done.stdout.count("[acceptance] ✗ a1") == 3
