"""The /rewind picker in the real REPL (tmux) against the real services and the fake model: a bare
/rewind lists the turns (time, prompt, files changed), ↑/Enter picks one and then what to take
back; code and conversation go back to just before it, its prompt returns to the input line, the
next request holds only the turns before it, and /resume shows the rewound session."""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import Stack, cli_stack
from tests.support.tmux_repl import TmuxRepl

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by scripts/setup_tests.sh")]


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-rpick-", [{"text": "unused", "repeat": "forever"}]) as running:
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Path:
    path = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    (path / "keep.txt").write_text("the user's\n")
    return path


@pytest.fixture
def repl(stack: Stack, workspace: Path) -> Iterator[TmuxRepl]:
    term = TmuxRepl(stack, workspace)
    term.wait_for("/help for commands")
    term.line("/permissions auto")
    term.wait_for("auto")
    yield term
    term.close()


def bash(match: str, command: str) -> dict[str, object]:
    return {"match": match, "tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def three_turns(stack: Stack, repl: TmuxRepl) -> None:
    stack.model.load_script([
        bash("first turn", "echo one > one.txt"), {"text": "one done"},
        bash("second turn", "printf 'a\\nb\\n' > two.txt && rm keep.txt"), {"text": "two done"},
        {"match": "third turn", "text": "three done"},
        {"match": "second turn", "text": "two again"},
    ])
    for n, prompt in enumerate(("first turn", "second turn", "third turn")):
        repl.line(prompt)
        repl.wait_for("● completed", after=n)


def test_the_picker_rewinds_code_and_conversation_to_before_the_picked_turn(
        stack: Stack, repl: TmuxRepl, workspace: Path) -> None:
    three_turns(stack, repl)
    assert not (workspace / "keep.txt").exists()
    repl.line("/rewind")
    screen = repl.wait_for("Rewind to just before which turn?")
    listed = screen[screen.rindex("Rewind to just before which turn?"):]
    assert re.search(r"turn 1 · \d\d:\d\d:\d\d · first turn · 1 file: one.txt \+1 -0", listed), listed
    assert re.search(r"turn 2 · \d\d:\d\d:\d\d · second turn · 2 files: keep.txt \+0 -1, two.txt \+2 -0",
                     listed), listed
    assert "❯ turn 3" in listed and "no files changed" in listed  # the cursor starts on the last turn
    repl.key("Up")
    repl.wait_for("❯ turn 2")
    repl.key("Enter")
    repl.wait_for("Rewind to just before turn 2: what?")
    repl.key("Enter")  # code and conversation
    screen = repl.wait_for("Rewound the conversation to the end of turn 1")
    assert "› /rewind 1 --both" in screen
    assert (workspace / "keep.txt").read_text() == "the user's\n" and not (workspace / "two.txt").exists()
    assert (workspace / "one.txt").exists()

    before = len(stack.model.chat_requests)
    repl.key("Enter")  # the picked turn's prompt is back on the input line: send it again
    repl.wait_for("● completed", after=3)
    request = stack.model.chat_requests[before].body
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    said = [u.split("\n")[0] for u in users if isinstance(u, str)]
    assert [s for s in said if s.endswith(" turn")] == ["first turn", "second turn"], said
    assert "three done" not in str(request) and "two done" not in str(request)

    session = re.findall(r"session ([0-9a-f]{12})", repl.screen())[0]
    repl.line("/clear")
    repl.wait_for("/help for commands", after=1)
    repl.line(f"/resume {session}")
    repl.wait_for(f"session {session}", after=1)
    resumed = _after_the_banner(repl, session, "two again")  # the history is replayed after the banner
    assert "two again" in resumed and "first turn" in resumed
    assert "third turn" not in resumed and "three done" not in resumed and "two done" not in resumed


def test_escape_cancels_the_picker_and_code_only_leaves_the_conversation(
        stack: Stack, repl: TmuxRepl, workspace: Path) -> None:
    three_turns(stack, repl)
    repl.line("/rewind")
    repl.wait_for("Rewind to just before which turn?")
    repl.key("Up")
    repl.wait_for("❯ turn 2")  # the picker reads keys
    repl.key("Escape")
    screen = repl.wait_for("rewind cancelled")
    assert "Rewind to just before which turn?" not in screen  # the list is gone from the screen
    assert not (workspace / "keep.txt").exists()
    repl.key("Escape", "Escape")  # a double Esc on the empty line opens it too
    repl.wait_for("Rewind to just before which turn?")
    repl.key("Up")
    repl.wait_for("❯ turn 2")
    repl.key("Enter")
    repl.wait_for("Rewind to just before turn 2: what?")
    repl.key("Down", "Down")
    repl.wait_for("❯ Code only")
    repl.key("Enter")
    screen = repl.wait_for("Rewound the code")
    assert "Rewound the conversation" not in screen[screen.rindex("› /rewind 1 --code"):]
    assert (workspace / "keep.txt").exists() and not (workspace / "two.txt").exists()


def _after_the_banner(repl: TmuxRepl, session: str, text: str, timeout: float = 30.0) -> str:
    """The screen below the session's last banner once ``text`` shows there (or as it is at ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        screen = repl.screen()
        below = screen[screen.rindex(f"session {session}"):] if f"session {session}" in screen else ""
        if text in below or time.monotonic() > deadline:
            return below
        time.sleep(0.1)
