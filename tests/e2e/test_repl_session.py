"""The real REPL in a pseudo-terminal (pexpect) against the real services and the fake model.

One stack per module: the fake model in-process, the four services via ``ai-coding up``
in a private runtime dir. Each test gets its own workspace (sessions live in the
workspace) and loads its own model script.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pexpect = pytest.importorskip("pexpect")

from clients.cli.repl.state import DOUBLE_PRESS_SECONDS  # noqa: E402
from clients.cli.slash import NOT_IN_THIS_VERSION  # noqa: E402
from tests.support.cli_stack import Stack, cli_stack  # noqa: E402
from tests.support.cli_stack import cli as _cli  # noqa: E402

ESC = "\x1b"
TIMEOUT = 40


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-repl-", [{"text": "unused", "repeat": "forever"}]) as running:
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    (path / "notes.txt").write_text("alpha\nbeta\n")
    yield path


class Term:
    """A REPL in a pseudo-terminal, with helpers that wait for what a user would see."""

    def __init__(self, stack: Stack, workspace: Path, *args: str) -> None:
        self.logs = Path(stack.env["AI_CODING_RUNTIME_DIR"]) / "logs"
        # The user's entry points: `ai-coding -w WS [--session ID]` and `ai-coding attach ID -w WS`.
        # (A start that died before its prompt was grpc's fork handler aborting the pty child:
        # see services/kernel/__init__.py. No second start is allowed.)
        self.child = pexpect.spawn(sys.executable, ["-m", "clients.cli.entry", *args, "-w", str(workspace)],
                                   env=stack.env, cwd=str(workspace), encoding="utf-8", dimensions=(40, 120),
                                   timeout=TIMEOUT, codec_errors="replace")
        self.seen = ""
        self.child.delaybeforesend = None
        self.expect("/help for commands")
        self.expect("›")  # the prompt owns the terminal from here on

    def expect(self, pattern: str) -> str:
        """Wait for ``pattern`` (plain text, not a regex) and return everything read up to it."""
        try:
            self.child.expect_exact(pattern)
        except (pexpect.EOF, pexpect.TIMEOUT) as err:
            raise AssertionError(f"{type(err).__name__} waiting for {pattern!r}; the terminal showed:\n"
                                 f"{plain(self.seen + str(self.child.before))[-3000:]}\n"
                                 f"--- loop log ---\n{self._log_tail('loop')}\n"
                                 f"--- client log ---\n{self._log_tail('client')}") from None
        chunk = str(self.child.before) + str(self.child.after)
        self.seen += chunk
        return chunk

    def _log_tail(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-15:]) if path.exists() else "(none)"

    def expect_re(self, pattern: str) -> str:
        self.child.expect(pattern)
        chunk = str(self.child.before) + str(self.child.after)
        self.seen += chunk
        return chunk

    def line(self, text: str) -> None:
        self.child.send(text + "\r")

    def key(self, seq: str) -> None:
        self.child.send(seq)

    def close(self) -> None:
        if self.child.isalive():
            self.child.sendcontrol("d")
            try:
                self.child.expect(pexpect.EOF, timeout=10)
            except pexpect.TIMEOUT:
                self.child.terminate(force=True)


@pytest.fixture
def term(stack: Stack, workspace: Path) -> Iterator[Term]:
    t = Term(stack, workspace)
    yield t
    t.close()


def plain(text: str) -> str:
    """Terminal output without our own CSI sequences (colours, cursor moves) and backspaces.

    Escapes from external text are shown as the four characters ``\\x1b``, so they survive this.
    """
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x08", "", text)


def script(stack: Stack, steps: list[dict[str, Any]]) -> None:
    stack.model.load_script(steps)


def test_a_full_turn_with_a_tool_streams_text_a_tool_line_and_a_status_line(stack: Stack, term: Term) -> None:
    script(stack, [
        {"reasoning": "The notes file should say.", "text": "Let me read it.",
         "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"text": "The notes say alpha and beta.", "usage": {"prompt_tokens": 2000, "completion_tokens": 9,
                                                            "cached_tokens": 1500}},
    ])
    term.line("what do the notes say?")
    out = term.expect("● completed")
    term.expect("\n")
    text = plain(out)
    assert "▸ thinking (26 chars)" in text
    assert "✓ Reading · notes.txt" in text
    assert "The notes say alpha and beta." in text
    assert re.search(r"● completed · [\d.k]+ in / [\d.k]+ out · cache \d+%", plain(term.seen))


def test_an_at_file_mention_attaches_the_file_to_the_request(stack: Stack, term: Term) -> None:
    script(stack, [{"text": "The notes list two words."}])
    term.line("summarise @notes.txt")
    out = plain(term.expect("● completed"))
    assert "attached notes.txt (11 bytes)" in out
    users = [m for m in stack.model.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users[-1]["content"].startswith('summarise @notes.txt\n\n<attachment path="notes.txt">\nalpha\nbeta\n')


def test_approvals_answered_y_n_and_enter_alone(stack: Stack, term: Term, workspace: Path) -> None:
    script(stack, [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo approved-run"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch denied-by-n"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch denied-by-enter"}}]},
        {"text": "All three answered."},
        {"text": "The queued line ran."},
    ])
    term.line("run three commands")
    term.expect("approve? [y/a/n/s]")
    term.line("then say when done")  # typed text is not an answer: it is queued, the approval waits
    term.expect("queued #1: then say when done")
    term.expect("an approval is still waiting")
    term.line("yes")  # the whole word: "y" answers, "es" is not sent to the model
    term.expect("→ allowed once")
    term.expect("approve? [y/a/n/s]")
    term.key("n")
    term.expect("→ denied")
    term.expect("approve? [y/a/n/s]")
    term.key("\r")
    term.expect("→ denied")
    term.expect("● completed")
    term.expect("› then say when done")
    term.expect("The queued line ran.")
    term.expect("● completed")
    text = plain(term.seen)
    assert re.search(r"✓ Running · echo approved-run · approved-run", text)
    assert not (workspace / "denied-by-n").exists()
    assert not (workspace / "denied-by-enter").exists()
    assert text.count("→ denied") == 2
    assert "queued #2" not in text and "› es" not in text and all(m["content"] != "es" for r in stack.model.chat_requests
                                      for m in r.messages if m.get("role") == "user")


def test_ask_user_is_answered_with_a_digit_then_with_the_arrow_keys(stack: Stack, term: Term) -> None:
    question = {"question": "Which colour?", "options": ["red", "green", "blue"]}
    script(stack, [
        {"tool_calls": [{"name": "ask_user", "arguments": question}]},
        {"tool_calls": [{"name": "ask_user", "arguments": question}]},
        {"text": "Noted both."},
    ])
    term.line("pick colours with me")
    term.expect("3. blue")
    term.expect("answer›")
    term.key("2")
    term.expect("→ green")
    term.expect("3. blue")
    term.expect("answer›")
    term.key(ESC + "[B")  # Down: the first option
    term.key(ESC + "[B")  # Down: the second
    term.key(ESC + "[B")  # Down: the third
    # Not expect("blue") here: prompt_toolkit redraws "green" -> "blue" by rewriting only what
    # changed ("blu", a cursor step over the shared "e"), so the word is on the screen but not in
    # the byte stream whenever it renders each key (flaky on a loaded machine). Keys are handled
    # in order: Enter answers with what the three Downs put in the line.
    term.key("\r")
    term.expect("→ blue")
    term.expect("● completed")
    tool_results = [str(m.get("content")) for m in stack.model.chat_requests[-1].messages if m.get("role") == "tool"]
    assert "green" in tool_results[-2] and "blue" in tool_results[-1]


def test_a_line_typed_during_a_turn_is_queued_and_runs_after_it(stack: Stack, term: Term) -> None:
    script(stack, [
        {"text": "first answer, slowly streamed", "chunk_chars": 3, "chunk_delay_ms": 150},
        {"text": "second answer"},
    ])
    term.line("first question")
    term.expect("first")
    term.line("second question")
    term.expect("queued #1: second question")
    term.expect("● completed")
    term.expect("› second question")
    term.expect("second answer")
    term.expect("● completed")
    text = plain(term.seen)
    assert text.index("first answer, slowly streamed") < text.index("› second question")
    assert "second question" in stack.model.chat_requests[-1].last_message


def test_esc_during_a_long_bash_call_cancels_it_and_the_turn_goes_on(stack: Stack, term: Term) -> None:
    script(stack, [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo started; sleep 30"}}]},
        {"text": "The sleep was cancelled; moving on."},
    ])
    term.line("wait a while")
    term.expect("approve? [y/a/n/s]")
    term.key("y")
    term.expect("│ started")  # the command runs (its first chunk arrived): now there is a batch to cancel
    term.key(ESC)
    term.expect("cancelling the running tools")
    out = term.expect("● completed")
    text = plain(out)
    assert "✗ Running · echo started; sleep 30 · cancelled_by_user" in text
    assert "The sleep was cancelled; moving on." in text


def test_ctrl_c_aborts_the_running_turn(stack: Stack, term: Term) -> None:
    script(stack, [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo started; sleep 30"}}]},
        {"text": "never reached"},
    ])
    term.line("wait a long while")
    term.expect("approve? [y/a/n/s]")
    term.key("y")
    term.expect("│ started")
    term.child.sendcontrol("c")
    term.expect("aborting the turn")
    out = term.expect("● interrupted")
    assert "never reached" not in plain(out)
    assert term.child.isalive()


def _session_with_a_tool_call(stack: Stack, workspace: Path) -> str:
    script(stack, [
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"text": "Read the notes: alpha, beta."},
    ])
    first = Term(stack, workspace)
    first.line("read my notes please")
    first.expect("● completed")
    first.close()
    return _session_id(first.seen)


def _assert_redrawn(out: str) -> None:
    text = plain(out)
    assert "› read my notes please" in text
    assert "✓ Reading · notes.txt" in text
    assert "Read the notes: alpha, beta." in text


def test_resume_by_id_prefix_redraws_a_session_with_tool_calls(stack: Stack, workspace: Path) -> None:
    session_id = _session_with_a_tool_call(stack, workspace)
    second = Term(stack, workspace)
    try:
        second.line(f"/resume {session_id[:8]}")
        _assert_redrawn(second.expect("── end of history ──"))
        assert _session_id(second.seen.split("/resume")[-1]) == session_id[:12]
    finally:
        second.close()
    listed = json.loads(_cli(stack.env, "sessions", "list", "--json", "-w", str(workspace)).stdout)
    full_id = next(row["id"] for row in listed if row["id"].startswith(session_id))
    third = Term(stack, workspace, "--session", full_id)  # `ai-coding --session ID`
    try:
        _assert_redrawn(third.seen + third.expect("── end of history ──"))
    finally:
        third.close()


def test_the_resume_picker_lists_the_session_by_day_and_resumes_by_number(stack: Stack, workspace: Path) -> None:
    session_id = _session_with_a_tool_call(stack, workspace)
    listed = json.loads(_cli(stack.env, "sessions", "list", "--json", "-w", str(workspace)).stdout)
    if any(row["id"].startswith(session_id) and row["open"] for row in listed):
        pytest.skip("loop: ListSessions reports a session open after its only client left "
                    "(open should mean a client is attached or a turn runs), so the picker hides it")
    second = Term(stack, workspace)
    try:
        second.line("/resume")
        second.expect("Today")
        second.expect("read my notes please")
        second.expect("resume›")
        second.line("1")
        _assert_redrawn(second.expect("── end of history ──"))
    finally:
        second.close()


def test_a_near_miss_command_says_did_you_mean_and_is_not_sent(stack: Stack, term: Term) -> None:
    requests_before = len(stack.model.chat_requests)
    term.line("/resum")
    term.expect("did you mean /resume?")
    term.line("/plan-run")
    term.expect("did you mean /plan?")
    term.line("/help")
    term.expect("/permissions")
    for name in sorted(NOT_IN_THIS_VERSION)[:1]:  # a listed command not built yet answers at once
        term.line(f"/{name}")
        term.expect(f"/{name} is not available in this version")
    term.line("/status")
    term.expect("messages")
    term.key("/re")
    term.expect("/review")  # the completion menu opens as soon as / is typed
    term.child.sendcontrol("u")
    assert len(stack.model.chat_requests) == requests_before


def test_markup_and_escape_sequences_from_the_model_and_tools_render_literally(
        stack: Stack, term: Term, workspace: Path) -> None:
    (workspace / "hostile.txt").write_text("[bold]B[/bold] [path=/tmp/x] \x1b[31mRED\x1b[0m \x1b]0;pwned\x07 end\n")
    script(stack, [
        {"tool_calls": [{"name": "read", "arguments": {"path": "hostile.txt"}}]},
        {"text": "Model says [bold]loud[/bold] [/x] and \x1b[5mblink\x1b[0m."},
    ])
    user_text = "show [bold]the[/bold] hostile [path=/tmp/x] file [/x]"
    term.line(user_text)
    out = term.expect("● completed")
    assert f"› {user_text}" in plain(out)
    assert "[bold]loud[/bold] [/x]" in out
    assert "\\x1b[5mblink\\x1b[0m" in out
    assert "\x1b[5m" not in out and "\x1b]0;" not in out and "\x07" not in out
    term.line("/last")
    last = term.expect("\\x1b]0;pwned\\x07 end")
    assert "[bold]B[/bold] [path=/tmp/x] \\x1b[31mRED\\x1b[0m" in last
    assert "\x1b[31mRED" not in last
    table = _cli(stack.env, "sessions", "list", "-w", str(workspace))
    assert user_text in table.stdout  # the session preview, printed as typed


def test_a_second_terminal_attaches_and_answers_the_approval(stack: Stack, term: Term, workspace: Path) -> None:
    script(stack, [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo from-attached"}}]},
        {"text": "Attached client approved it."},
        {"text": "Reply to the second terminal."},
    ])
    term.line("run something needing approval")
    term.expect("approve? [y/a/n/s]")
    session_id = _session_id(term.seen)
    other = Term(stack, workspace, "attach", session_id)
    try:
        other.expect("? approve bash")
        other.expect("approve? [y/a/n/s]")
        other.key("y")
        for t in (other, term):
            t.expect("→ allowed once")
            t.expect("Attached client approved it.")
            t.expect("● completed")
        other.line("typed in the second terminal")
        for t in (other, term):
            t.expect("typed in the second terminal")
            t.expect("Reply to the second terminal.")
            t.expect("● completed")
    finally:
        other.close()


def _session_id(seen: str) -> str:
    match = re.search(r"session ([0-9a-f]{6,})", plain(seen))
    assert match, seen
    return match.group(1)


def test_ctrl_y_copies_the_last_tool_call_with_osc52(stack: Stack, term: Term) -> None:
    script(stack, [
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"text": "Read it."},
    ])
    term.line("read the notes")
    term.expect("● completed")
    term.child.sendcontrol("y")
    out = term.expect_re(r"\x1b\]52;c;([A-Za-z0-9+/=]+)\x07")
    payload = re.search(r"\x1b\]52;c;([A-Za-z0-9+/=]+)\x07", out)
    assert payload is not None
    copied = base64.b64decode(payload.group(1)).decode()
    assert '"path": "notes.txt"' in copied and "alpha" in copied and "beta" in copied
    term.expect("copied the last tool call")


def test_the_task_list_shows_as_dim_lines_when_it_changes(stack: Stack, term: Term) -> None:
    script(stack, [
        {"tool_calls": [{"name": "todo_write", "arguments": {
            "goal": "tidy the notes", "add": [{"id": "1", "content": "read notes"},
                                              {"id": "2", "content": "sort notes"}]}}]},
        {"tool_calls": [{"name": "todo_write", "arguments": {"update": [{"id": "1", "status": "completed"}]}}]},
        {"text": "Planned."},
    ])
    term.line("plan the tidy-up")
    out = plain(term.expect("● completed"))
    assert "tasks 0/2 · tidy the notes" in out
    assert "tasks 1/2 · tidy the notes" in out
    assert "☑ read notes" in out and "☐ sort notes" in out


def test_ctrl_d_exits_and_ctrl_c_twice_on_an_empty_prompt_exits(stack: Stack, workspace: Path) -> None:
    first = Term(stack, workspace)
    first.child.sendcontrol("d")
    first.child.expect(pexpect.EOF)
    first.child.close()
    assert first.child.exitstatus == 0
    second = Term(stack, workspace)
    # A Ctrl-C typed while output is printed arrives as SIGINT (the terminal is briefly cooked).
    second.child.kill(signal.SIGINT)
    second.expect("press Ctrl-C again to exit")
    assert second.child.isalive()
    time.sleep(DOUBLE_PRESS_SECONDS + 0.5)  # too late to count as the second press
    second.child.sendcontrol("c")
    second.expect("press Ctrl-C again to exit")
    assert second.child.isalive()
    second.child.sendcontrol("c")
    second.child.expect(pexpect.EOF)
    second.child.close()
    assert second.child.exitstatus == 0


def test_at_60_columns_a_long_status_line_is_cut_not_wrapped(stack: Stack, workspace: Path) -> None:
    script(stack, [{"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
                   {"text": "ok", "usage": {"prompt_tokens": 123456789, "completion_tokens": 98765,
                                            "cached_tokens": 1234}}])
    narrow = Term(stack, workspace)
    narrow.child.setwinsize(40, 60)  # the REPL reads the tty's width on every event
    try:
        narrow.line("read the notes at sixty columns")
        out = plain(narrow.expect("● completed"))
        status = plain(narrow.expect("\n"))
        tool_lines = [line for line in out.splitlines() if "Reading · notes.txt" in line]
        assert tool_lines and all(len(line.strip("\r")) <= 60 for line in tool_lines)
        line = ("● completed" + status).strip("\r\n")
        assert len(line) <= 60 and line.endswith("…"), line
    finally:
        narrow.close()


def test_a_missing_workspace_is_one_readable_line(stack: Stack) -> None:
    child = pexpect.spawn(sys.executable, ["-m", "clients.cli.entry", "-w", "/nonexistent/ws"], env=stack.env,
                          encoding="utf-8", timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2
    out = str(child.before)
    assert "Traceback" not in out
    assert out.strip() == "ai-coding: workspace /nonexistent/ws is not a directory; pass an existing one with -w"


def test_without_a_terminal_the_repl_says_to_use_run(stack: Stack, workspace: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "clients.cli.entry", "-w", str(workspace)], env=stack.env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr + done.stdout
    assert done.stderr.strip() == ('ai-coding: the interactive client needs a terminal; '
                                   'for scripts use `ai-coding run "PROMPT"`')


def test_sessions_list_prints_the_workspace_sessions_as_json(stack: Stack, workspace: Path) -> None:
    session_id = _session_with_a_tool_call(stack, workspace)
    done = _cli(stack.env, "sessions", "list", "--json", "-w", str(workspace))
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    row = next(r for r in rows if r["id"].startswith(session_id))
    assert row["preview"] == "read my notes please"
    assert row["messages"] >= 4
    table = _cli(stack.env, "sessions", "list", "-w", str(workspace))
    assert "Today" in table.stdout and "read my notes please" in table.stdout


def test_sessions_show_prints_a_saved_session_by_id_prefix_and_refuses_an_unknown_one(
        stack: Stack, workspace: Path) -> None:
    session_id = _session_with_a_tool_call(stack, workspace)
    shown = _cli(stack.env, "sessions", "show", session_id[:8], "-w", str(workspace))
    assert shown.returncode == 0, shown.stderr
    _assert_redrawn(shown.stdout)
    as_json = _cli(stack.env, "sessions", "show", session_id[:8], "--json", "-w", str(workspace))
    messages = json.loads(as_json.stdout)
    assert [m["role"] for m in messages][:3] == ["user", "assistant", "tool"]
    assert messages[1]["toolCalls"][0]["name"] == "read"
    missing = _cli(stack.env, "sessions", "show", "zzzz-no-such", "-w", str(workspace))
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.startswith("ai-coding sessions show: ") and "zzzz-no-such" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


def test_the_repl_starts_the_services_when_none_are_running(stack: Stack) -> None:
    base = Path(tempfile.mkdtemp(prefix="aic-cold-", dir="/tmp"))
    os.chmod(base, 0o700)
    env = {**stack.env, "AI_CODING_RUNTIME_DIR": str(base / "run")}
    workspace = base / "ws"
    workspace.mkdir()
    child = pexpect.spawn(sys.executable, ["-m", "clients.cli.entry", "-w", str(workspace)], env=env,
                          cwd=str(workspace), encoding="utf-8", dimensions=(40, 120), timeout=90)
    try:
        child.expect_exact("/help for commands")
        status = _cli(env, "status")
        assert "SERVING" in status.stdout
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        child.terminate(force=True)
        _cli(env, "down", timeout=60)
        shutil.rmtree(base, ignore_errors=True)


def test_attaching_to_an_unknown_session_is_one_readable_line(stack: Stack, workspace: Path) -> None:
    child = pexpect.spawn(sys.executable, ["-m", "clients.cli.entry", "attach", "feedbeef", "-w", str(workspace)],
                          env=stack.env, cwd=str(workspace), encoding="utf-8", dimensions=(40, 120), timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    out = plain(str(child.before))
    assert child.exitstatus == 1
    assert "Traceback" not in out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: cannot open the session:"), out


def _loop_status(stack: Stack) -> dict[str, Any]:
    done = _cli(stack.env, "status", "--json")
    return dict(json.loads(done.stdout)["services"]["loop"])


def test_the_repl_survives_a_loop_restart_and_the_next_turn_works(stack: Stack, term: Term) -> None:
    script(stack, [{"text": "before the crash"}, {"text": "after the restart"}])
    term.line("first")
    term.expect("before the crash")
    term.expect("● completed")
    old_pid = _loop_status(stack)["pid"]
    os.kill(old_pid, signal.SIGKILL)
    term.line("second")  # at once: the REPL keeps sending the Start until the restarted loop takes it
    out = plain(term.expect("● completed"))
    assert "after the restart" in out
    assert "Traceback" not in plain(term.seen)
    assert _loop_status(stack)["pid"] != old_pid
