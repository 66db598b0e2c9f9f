"""`run -c` when the newest session's files are garbage: it says so (naming the session and its file)
before going on in the newest readable session, instead of switching sessions without a word."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import Stack, cli, cli_stack


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-cont-", [{"text": "ok", "repeat": "forever"}], ", max_retries: 0") as running:
        yield running


def test_continue_names_an_unreadable_newest_session_and_the_one_it_continues(stack: Stack) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    assert cli(stack.env, "run", "-w", str(workspace), "first session").returncode == 0
    time.sleep(0.05)
    assert cli(stack.env, "run", "-w", str(workspace), "second session").returncode == 0
    rows = json.loads(cli(stack.env, "sessions", "list", "-w", str(workspace), "--json").stdout)
    newest, older = rows[0]["id"], rows[1]["id"]
    # A fresh loop (as after a crash) reads the files again; the one that ran them held them in memory.
    assert cli(stack.env, "down", timeout=60).returncode == 0
    folder = workspace / ".ai-coding" / "sessions"
    for path in folder.glob(f"{newest}.*"):
        if path.suffix in (".json", ".journal"):
            path.write_bytes(b"\x00garbage{{{")
    assert cli(stack.env, "up").returncode == 0
    done = cli(stack.env, "run", "-w", str(workspace), "-c", "go on", "--json")
    assert done.returncode == 0, done.stderr
    assert newest in done.stderr and "cannot be read" in done.stderr, done.stderr
    started = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert {e.get("sessionId") for e in started if e.get("sessionId")} == {older}
