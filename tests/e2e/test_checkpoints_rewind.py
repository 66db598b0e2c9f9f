"""Rewind through the real CLI and services with the scripted fake model: a shell step's damage
(rm -rf, sed -i, mv, chmod, binary and untracked files, a symlink) undone byte for byte by tree
hash with the user's own edit kept and named, then redone; and a conversation rewound to turn 2
of 4, checked from the model's next request."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import Stack, cli, cli_stack
from tests.support.trees import tree_hash, tree_listing

pytestmark = pytest.mark.slow

SHELL_STEP = ("rm -rf src && sed -i 's/old/new/' notes.txt && mv docs manual && chmod 600 run.sh "
              "&& printf '\\000\\001\\002' > blob.bin && echo u > untracked.txt && ln -s manual/a.md link.md")


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-ckpt-", [{"text": "unused"}], ", max_retries: 0") as running:
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Path:
    root = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    (root / "src" / "pkg").mkdir(parents=True)
    for i in range(4):
        (root / "src" / "pkg" / f"m{i}.py").write_text(f"value = {i}\n")
    (root / "notes.txt").write_text("old line\n")
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("# a\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "image.png").write_bytes(bytes(range(256)))
    (root / "mine.txt").write_text("the user's file\n")
    return root


def run(stack: Stack, workspace: Path, prompt: str, session: str = "") -> None:
    args = ["run", "--auto-approve", "-w", str(workspace), *(["--session", session] if session else []), prompt]
    done = cli(stack.env, *args, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr


def only_session(stack: Stack, workspace: Path) -> str:
    listed = cli(stack.env, "sessions", "list", "-w", str(workspace), "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert len(rows) == 1
    return str(rows[0]["id"])


def test_a_shell_turn_is_rewound_byte_for_byte_keeping_the_users_edit_and_redone(
        stack: Stack, workspace: Path) -> None:
    before = tree_listing(workspace)
    stack.model.load_script([{"tool_calls": [{"name": "bash", "arguments": {"command": SHELL_STEP}}]},
                             {"text": "Made a mess."}])
    run(stack, workspace, "make a mess")
    after_turn = tree_hash(workspace)
    assert not (workspace / "src").exists() and (workspace / "link.md").is_symlink()
    (workspace / "mine.txt").write_text("edited by the user after the turn\n")
    session = only_session(stack, workspace)

    listed = cli(stack.env, "checkpoints", "list", "--session", session, "-w", str(workspace))
    assert listed.returncode == 0 and "1.1" in listed.stdout and "bash" in listed.stdout, listed.stdout

    undone = cli(stack.env, "rewind", "--session", session, "--to", "1.1", "--code", "-w", str(workspace))
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert "mine.txt" in undone.stdout and "Kept" in undone.stdout
    now = {row[0]: row for row in tree_listing(workspace)}
    assert tree_listing(workspace) == [now["mine.txt"] if row[0] == "mine.txt" else row for row in before]
    assert (workspace / "mine.txt").read_text() == "edited by the user after the turn\n"
    assert (workspace / "image.png").read_bytes() == bytes(range(256))

    (workspace / "mine.txt").write_text("the user's file\n")  # as it was when the turn ended, for the hash
    redo = cli(stack.env, "rewind", "--session", session, "--to", "1", "--code", "--force", "-w", str(workspace))
    assert redo.returncode == 0, redo.stdout + redo.stderr
    assert tree_hash(workspace) == after_turn


def test_rewinding_the_conversation_to_turn_2_of_4_sends_only_turns_1_and_2(stack: Stack, workspace: Path) -> None:
    todo = [{"tool_calls": [{"name": "todo_write", "arguments": {"add": [{"content": "alpha task"}]}}]}]
    later_todo = [{"tool_calls": [{"name": "todo_write", "arguments": {"add": [{"content": "gamma task"}]}}]}]
    stack.model.load_script([*todo, {"text": "one"}, {"text": "two"}, *later_todo, {"text": "three"},
                             {"text": "four"}, {"text": "five"}])
    run(stack, workspace, "turn one")
    session = only_session(stack, workspace)
    for prompt in ("turn two", "turn three", "turn four"):
        run(stack, workspace, prompt, session)
    rewound = cli(stack.env, "rewind", "--session", session, "--to", "2", "--conversation", "-w", str(workspace))
    assert rewound.returncode == 0, rewound.stdout + rewound.stderr
    run(stack, workspace, "turn five", session)

    request = stack.model.chat_requests[-1].body
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    said = [(u if isinstance(u, str) else json.dumps(u)).split("\n")[0] for u in users]  # the step tail follows
    assert [s for s in said if s.startswith("turn ")] == ["turn one", "turn two", "turn five"], said
    assistants = [m.get("content") for m in request["messages"] if m["role"] == "assistant"]
    assert "three" not in assistants and "four" not in assistants and "two" in assistants
    text = json.dumps(request)
    assert "alpha task" in text and "gamma task" not in text
