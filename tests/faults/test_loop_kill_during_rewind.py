"""kill -9 of the loop service while `ai-coding rewind` restores 1,000 files: the restore runs in
the tools service from its journal, so the workspace still ends equal to a checkpoint (here the
target), never half; after the loop is back, the session rewinds again normally (redo)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli_stack import Stack, cli, cli_stack
from tests.support.trees import tree_hash

pytestmark = pytest.mark.slow

MAKE_1000 = ("python3 -c \"import pathlib\nfor i in range(1000):\n"
             "    p = pathlib.Path(f'd{i % 20}/f{i}.txt'); p.parent.mkdir(exist_ok=True); p.write_text('b' * 16384)\"")


def status(stack: Stack) -> dict[str, dict[str, object]]:
    done = cli(stack.env, "status", "--json")
    report: dict[str, dict[str, dict[str, object]]] = json.loads(done.stdout)
    return report["services"]


def test_kill_9_of_the_loop_during_a_rewind_of_1000_files_leaves_a_checkpoint(tmp_path: Path) -> None:
    with cli_stack("aic-loopkill-", [{"text": "unused"}], ", max_retries: 0") as stack:
        workspace = stack.base / "ws"
        workspace.mkdir()
        for i in range(1000):
            (workspace / f"d{i % 20}").mkdir(exist_ok=True)
            (workspace / f"d{i % 20}" / f"f{i}.txt").write_text("a" * 16384)
        before = tree_hash(workspace)
        stack.model.load_script([{"tool_calls": [{"name": "bash", "arguments": {"command": MAKE_1000}}]},
                                 {"text": "Rewrote them."}])
        done = cli(stack.env, "run", "--auto-approve", "-w", str(workspace), "rewrite the files", timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr
        after = tree_hash(workspace)
        assert after != before
        session = json.loads(cli(stack.env, "sessions", "list", "-w", str(workspace), "--json").stdout)[0]["id"]

        journals = Path(stack.env["XDG_DATA_HOME"]) / "ai-coding" / "checkpoints"
        loop_pid = int(str(status(stack)["loop"]["pid"]))
        rewind = subprocess.Popen([sys.executable, "-m", "clients.cli.entry", "rewind", "--session", session, "--to",
                                   "1.1", "--code", "-w", str(workspace)], env=stack.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        while not list(journals.glob("*/journal.json")):
            assert time.monotonic() < deadline and rewind.poll() is None, "the restore ended before the kill"
            time.sleep(0.001)
        os.kill(loop_pid, signal.SIGKILL)
        output, _ = rewind.communicate(timeout=120)
        assert rewind.returncode != 0, output  # its loop died under it
        deadline = time.monotonic() + 60
        while list(journals.glob("*/journal.json")):  # the tools service finishes the restore by itself
            assert time.monotonic() < deadline, "the restore never finished"
            time.sleep(0.05)
        assert tree_hash(workspace) in (before, after)
        assert tree_hash(workspace) == before

        # The client starts the loop again; the session's checkpoints are still there.
        listed = cli(stack.env, "checkpoints", "list", "--session", session, "-w", str(workspace), timeout=120)
        assert listed.returncode == 0 and "1.1" in listed.stdout, listed.stdout + listed.stderr
        again = cli(stack.env, "rewind", "--session", session, "--to", "1", "--code", "-w", str(workspace),
                    timeout=120)
        assert again.returncode == 0, again.stdout + again.stderr
        assert tree_hash(workspace) == after
