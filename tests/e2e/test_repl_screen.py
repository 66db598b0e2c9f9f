"""What the REPL shows all day, in tmux against the real services and the fake model: each edit's
diff inline (coloured), /diff with the turn's (or the session's) changes as one diff, and what a turn
and the session cost (the model here has prices set: $2 in / $10 out per million tokens)."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from clients.cli.runtime import wait_until
from tests.support.cli_stack import Stack, cli, cli_stack
from tests.support.tmux_repl import TmuxRepl

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by scripts/setup_tests.sh")


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-rscreen-", [{"text": "unused", "repeat": "forever"}],
                   ", price_input_per_mtok: 2.0, price_output_per_mtok: 10.0") as running:
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Path:
    path = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    (path / "calc.py").write_text("a = 1\nb = 2\n")
    return path


@pytest.fixture
def repl(stack: Stack, workspace: Path) -> Iterator[TmuxRepl]:
    term = TmuxRepl(stack, workspace)
    term.wait_for("/help for commands")
    yield term
    term.close()


def _two_edits(stack: Stack, match: str) -> None:
    stack.model.load_script([
        {"match": match, "tool_calls": [{"name": "read", "arguments": {"path": "calc.py"}}]},
        {"tool_calls": [{"name": "edit", "arguments": {"path": "calc.py", "old_string": "b = 2",
                                                       "new_string": "b = 3"}}]},
        {"tool_calls": [{"name": "edit", "arguments": {"path": "calc.py", "old_string": "a = 1",
                                                       "new_string": "a = 10\nz = 0"}}]},
        {"text": "Both edits are in."},
    ])


def test_an_edit_under_auto_shows_its_coloured_diff_and_slash_diff_shows_the_turn(
        stack: Stack, repl: TmuxRepl, workspace: Path) -> None:
    repl.line("/permissions auto")
    repl.wait_for("auto")
    _two_edits(stack, "change calc")
    repl.line("change calc")
    screen = repl.wait_for("● completed")
    assert "✓ Editing · calc.py · Edited calc.py: 1 replacement. · +1 -1" in screen
    assert "    -b = 2\n    +b = 3" in screen and "    +a = 10\n    +z = 0" in screen
    coloured = repl.screen(colours=True)
    assert "\x1b[32m    +b = 3" in coloured and "\x1b[31m    -b = 2" in coloured
    assert (workspace / "calc.py").read_text() == "a = 10\nz = 0\nb = 3\n"

    repl.line("/diff")
    screen = repl.wait_for("1 file changed, +3 -2 this turn")
    shown = screen[screen.rindex("1 file changed, +3 -2 this turn"):].splitlines()
    assert shown[1:3] == ["--- a/calc.py", "+++ b/calc.py"]
    assert [line for line in shown if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))] == [
        "-b = 2", "+b = 3", "-a = 1", "+a = 10", "+z = 0"]


def test_slash_diff_session_keeps_earlier_turns_that_slash_diff_leaves_out(stack: Stack, repl: TmuxRepl) -> None:
    repl.line("/permissions auto")
    repl.wait_for("auto")
    _two_edits(stack, "first turn")
    repl.line("first turn")
    repl.wait_for("● completed")
    stack.model.load_script([{"text": "Nothing to change."}])
    repl.line("second turn")
    repl.wait_for("● completed", after=1)
    repl.line("/diff")
    repl.wait_for("no file changes in this turn yet")
    repl.line("/diff session")
    screen = repl.wait_for("1 file changed, +3 -2 this session")
    assert "+a = 10" in screen[screen.rindex("this session"):]


def test_the_footer_and_slash_cost_show_the_turns_and_the_sessions_cost(stack: Stack, repl: TmuxRepl) -> None:
    usage = {"prompt_tokens": 2000, "completion_tokens": 100, "cached_tokens": 1500}
    stack.model.load_script([{"text": "First.", "usage": usage}, {"text": "Second.", "usage": usage}])
    repl.line("one")
    screen = repl.wait_for("● completed")
    # (2000 * $2 + 100 * $10) / 1M: the cached tokens are priced as input when no cached price is set
    assert "● completed · 2.0k in / 100 out · $0.0050 · cache 75%" in screen
    repl.line("two")
    repl.wait_for("● completed", after=1)
    repl.line("/cost")
    screen = repl.wait_for("2 turns")
    assert "last turn     $0.0050 · 2.0k in / 100 out · cache 75%" in screen
    assert "session       $0.0100 · 4.0k in / 200 out · cache 75% · 2 turns" in screen
    repl.line("/budget")  # the ledger has the cost next to its tokens
    screen = repl.wait_for("session tokens: 4200")
    assert "session tokens: 4200 (prompt 4000 · completion 200) · cost $0.0100" in screen


def test_a_provider_that_reports_no_usage_is_not_reported_not_zero(stack: Stack, repl: TmuxRepl) -> None:
    stack.model.load_script([{"text": "No counts from me.", "usage_shape": "none"}])
    repl.line("hello")
    screen = repl.wait_for("● completed")
    assert "● completed · usage not reported ·" in screen and "0 in / 0 out" not in screen
    repl.line("/cost")
    screen = repl.wait_for("last turn")
    assert "last turn     usage not reported" in screen


def test_a_six_second_command_ticks_above_the_prompt_with_the_keys_that_interrupt(
        stack: Stack, repl: TmuxRepl) -> None:
    from clients.cli.progress import REPL_KEYS

    repl.line("/permissions auto")
    repl.wait_for("auto")
    stack.model.load_script([{"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 6"}}]},
                             {"text": "Slept."}])
    repl.line("wait a bit")
    screen = repl.wait_for("Running · sleep 6 · 2s")
    assert REPL_KEYS in screen and "⋯ step 1 · Running · sleep 6 · 2s · turn " in screen
    repl.wait_for("Running · sleep 6 · 4s")
    screen = repl.wait_for("● completed")
    assert "⋯ step" not in screen  # the status line goes with the turn


def test_a_background_child_has_a_one_line_status_above_the_prompt_until_it_ends(
        stack: Stack, repl: TmuxRepl) -> None:
    stack.model.load_script({"order": "first_match", "steps": [
        {"match_first_user": "start it", "tool_calls": [{"name": "subAgent", "arguments": {
            "task": "count slowly", "name": "counter", "background": True}}]},
        {"match_first_user": "start it", "match_anywhere": '"run_id"', "text": "Started it."},
        {"match_first_user": "count slowly", "text": "Counted.", "delay_ms": 5000},
    ]})
    repl.line("start it")
    repl.wait_for("● completed")
    repl.wait_for("⋯ background: counter 1s")
    screen = repl.wait_for("⋯ background: counter 2s")  # ticking while the prompt is idle
    assert screen.rstrip().splitlines()[-1].startswith("›")  # the prompt is free meanwhile
    repl.wait_for("⟲ background subagent counter", timeout=60)
    screen = repl.wait_for("⟲ background subagent counter")
    assert "⋯ background" not in screen.rstrip().splitlines()[-2], screen


def test_a_folded_diff_names_its_key_and_the_key_shows_it_whole(
        stack: Stack, repl: TmuxRepl, workspace: Path) -> None:
    repl.line("/permissions auto")
    repl.wait_for("auto")
    content = "".join(f"line_{n} = {n}\n" for n in range(30))
    stack.model.load_script([{"tool_calls": [{"name": "write", "arguments": {"path": "big.py", "content": content}}]},
                             {"text": "Written."}])
    repl.line("write big")
    screen = repl.wait_for("● completed")
    assert "    … 19 more lines (Ctrl-O unfolds · /diff shows all)" in screen
    assert "+line_29 = 29" not in screen
    repl.key("C-o")
    screen = repl.wait_for("big.py · +30 -0 · whole")
    whole = screen[screen.rindex("big.py · +30 -0 · whole"):]
    assert "    +line_0 = 0" in whole and "    +line_29 = 29" in whole
    repl.key("C-o")  # shown once: a second press says there is nothing folded left
    repl.wait_for("no folded diff to unfold")
    assert (workspace / "big.py").read_text() == content


def test_slash_diff_session_comes_back_from_the_saved_session_after_resume(
        stack: Stack, repl: TmuxRepl, workspace: Path) -> None:
    repl.line("/permissions auto")
    repl.wait_for("auto")
    _two_edits(stack, "edit then leave")
    repl.line("edit then leave")
    screen = repl.wait_for("● completed")
    session = screen.split("ai-coding · session ", 1)[1][:12]
    repl.close()
    other = TmuxRepl(stack, workspace, name="resumer")  # a new client: nothing of the first one's memory
    try:
        other.wait_for("/help for commands")
        other.line("/diff session")
        other.wait_for("no file changes in this session yet")
        other.line(f"/resume {session}")
        other.wait_for(f"session {session}", after=0)
        other.wait_for("› edit then leave")
        other.line("/diff session")
        screen = other.wait_for("1 file changed, +3 -2 this session")
        shown = screen[screen.rindex("this session"):].splitlines()
        assert [line for line in shown if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))] == [
            "-b = 2", "+b = 3", "-a = 1", "+a = 10", "+z = 0"]
        other.line("/diff")
        other.wait_for("no file changes in this turn yet")
    finally:
        other.close()


def test_a_background_job_has_a_live_status_line_gone_with_a_note_when_it_ends(
        stack: Stack, repl: TmuxRepl) -> None:
    repl.line("/permissions auto")
    repl.wait_for("auto")
    stack.model.load_script([
        {"tool_calls": [{"name": "job_start", "arguments": {"command": "sleep 12", "name": "napper"}}]},
        {"text": "Started the job."}])
    repl.line("start a job")
    repl.wait_for("● completed")
    repl.wait_for("⋯ background: $ napper 2s")
    # Ticking while the prompt is idle: the age shown grows (a loaded machine may skip a second).
    assert wait_until(lambda: _job_age(repl.screen()) >= 3, 20), repl.screen()[-600:]
    assert repl.screen().rstrip().splitlines()[-1].startswith("›")
    repl.line("/jobs")
    screen = repl.wait_for("job-1  running")
    assert "sleep 12" in screen[screen.rindex("job-1  running"):]
    screen = repl.wait_for("⟲ background job job-1 (napper) exited 0 ·", timeout=30)
    assert "⋯ background" not in screen.rstrip().splitlines()[-2], screen


def test_runs_folded_diff_names_the_repl_and_the_repl_continuing_it_shows_the_diff_whole(
        stack: Stack, workspace: Path) -> None:
    content = "".join(f"v{n} = {n}\n" for n in range(30))
    stack.model.load_script([{"tool_calls": [{"name": "write", "arguments": {"path": "gen.py", "content": content}}]},
                             {"text": "Generated."}])
    done = cli(stack.env, "run", "--auto-approve", "-w", str(workspace), "generate")
    assert done.returncode == 0, done.stderr
    assert "    … 19 more lines (`ai-coding -c` then /diff session shows all)" in done.stdout.splitlines()
    term = TmuxRepl(stack, workspace, name="continuer", args=("-c",))
    try:
        term.wait_for("/help for commands")
        term.line("/diff session")
        screen = term.wait_for("1 file changed, +30 -0 this session")
        assert "+v29 = 29" in screen[screen.rindex("this session"):]
    finally:
        term.close()


def _job_age(screen: str) -> int:
    """The newest age the status line shows for the napper job (0 when none)."""
    ages = re.findall(r"⋯ background: \$ napper (\d+)s", screen)
    return int(ages[-1]) if ages else 0
