"""Two `ai-coding run --session S` clients on one session (real CLI processes, services, fake model):
the second, started while the first's slow turn runs, has its input queued and waits for its own
turn: it prints its own answer and exits with its own turn's code, not the first's."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import Stack, cli, cli_stack


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-two-", [{"text": "unused"}], ", max_retries: 0") as running:
        yield running


def test_a_second_client_on_a_busy_session_waits_for_its_own_turn_and_reports_it(stack: Stack) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    stack.model.load_script({"order": "first_match", "steps": [
        {"match": "warm up", "text": "warm"},
        {"match": "slow first", "text": "FIRST-ANSWER", "delay_ms": 4000},
        {"match": "quick second", "tool_calls": [{"name": "bash", "arguments": {"command": "exit 3"}}]},
        {"match_anywhere": "quick second", "text": "SECOND-ANSWER", "repeat": "forever"},
    ]})
    assert cli(stack.env, "run", "-w", str(workspace), "warm up").returncode == 0
    rows = json.loads(cli(stack.env, "sessions", "list", "-w", str(workspace), "--json").stdout)
    sid = rows[0]["id"]

    def run(text: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "clients.cli.entry", "run", "-w", str(workspace), "--session",
                                 sid, "--json", text], env=stack.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)

    first = run("slow first")
    time.sleep(1.5)  # the first turn is waiting on the model (4 s)
    second = run("quick second")
    out1, err1 = first.communicate(timeout=120)
    out2, err2 = second.communicate(timeout=120)
    assert first.returncode == 0 and "FIRST-ANSWER" in out1, err1
    ends = [json.loads(line) for line in out2.splitlines() if '"turnFinished"' in line or "turn_finished" in line]
    assert ends, out2[-2000:]
    assert "SECOND-ANSWER" in json.dumps(ends[-1]) and "FIRST-ANSWER" not in json.dumps(ends[-1]), ends[-1]
    assert second.returncode == 0, err2
    assert "queued" in out2.lower() or "inputQueued" in out2, out2[-2000:]
