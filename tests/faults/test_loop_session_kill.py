"""kill -9 at random instants while a process saves and compacts a session: every load afterwards
has every message that was reported saved, in order, paired, with nothing invented."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from services.loop.core.sessions import SessionStore

WRITER = r'''
import sys
sys.path[:0] = [sys.argv[2], sys.argv[2] + "/protos"]
from services.loop.core.sessions import SessionStore
store = SessionStore(sys.argv[1])
session = store.create("fake")
print(session.id, flush=True)
i = 0
while True:
    cid = f"c{i}"
    session.messages += [
        {"role": "user", "content": f"u{i}"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": cid, "content": f"r{i}" + "x" * 3000},
    ]
    store.save(session)
    print(len(session.messages), flush=True)
    if i % 5 == 4:
        store.compact(session)
    i += 1
'''


def test_a_session_killed_at_random_instants_always_loads_everything_it_reported_saved(tmp_path: Path) -> None:
    repo = str(Path(__file__).resolve().parents[2])
    rng = random.Random(4)
    for round_no in range(12):
        workspace = tmp_path / f"ws{round_no}"
        workspace.mkdir()
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(workspace), repo], stdout=subprocess.PIPE)
        assert proc.stdout is not None
        sid = proc.stdout.readline().decode().strip()
        time.sleep(rng.uniform(0.05, 0.6))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        reported = [int(line) for line in proc.stdout.read().decode().split()]
        saved = reported[-1] if reported else 0
        session, warnings = SessionStore(workspace).load(sid)
        assert len(session.messages) >= saved, (round_no, len(session.messages), saved, warnings)
        assert not [w for w in warnings if "corrupt" in w or "gap" in w], warnings
        for index, message in enumerate(session.messages):
            turn, kind = divmod(index, 3)
            expected = ("user", "assistant", "tool")[kind]
            assert message["role"] == expected, (round_no, index, message)
            if kind == 0:
                assert message["content"] == f"u{turn}"
            if kind == 2:
                assert message["tool_call_id"] == f"c{turn}" and message["content"].startswith(f"r{turn}")
