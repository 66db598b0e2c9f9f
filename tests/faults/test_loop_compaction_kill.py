"""kill -9 of the loop service while a compaction waits on its summary: the session reloads with every
completed step and the checkpoint it had before (never half of the new one), and goes on from there."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from ai_coding.v1 import loop_pb2

from services.fake_model import FakeModelServer
from services.kernel.config import Config
from services.loop.compaction.state import CompactionState, build_view, validate
from services.loop.compaction.summary import SUMMARY_MARKER
from services.loop.core.pairing import is_paired
from services.loop.core.sessions import SessionStore
from tests.faults.test_loop_crash import LoopProcess, _open
from tests.service.loop.harness import Conversation, ServiceThread, finished, kinds, status_name

BIG_OUTPUT = "head -c 15000 /dev/urandom | base64 -w 100"
FIRST_SUMMARY = "CHECKPOINT-ONE: the user wants the outputs produced."


@pytest.fixture
def loop_proc(short_dir: Path, isolated_home: Path, tmp_path: Path) -> Iterator[tuple[LoopProcess, FakeModelServer,
                                                                                       Path]]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    services = ServiceThread()
    from services.tools.main import build as build_tools

    tools_addr = f"unix:{short_dir}/tools.sock"
    services.serve(tools_addr, build_tools(Config(data={})))
    with FakeModelServer([], context_window=32_000) as fake:
        config = {
            "models": {"fake": {"provider": "generic", "base_url": fake.url, "api_key": "k", "model": "fake-model",
                                "context_window": 32_000, "max_tokens": 4000, "max_retries": 0}},
            "default_model": "fake",
            "ai": {"max_tool_iterations": 100, "duplicate_call_threshold": 0},
            "endpoints": {"loop": f"unix:{short_dir}/loop.sock", "tools": tools_addr},
            "loop": {"memory": False, "mcp": False, "harvest": False},
            # The outputs stay verbatim until the ceiling, so each compaction is one with a summary (the
            # L2-only ones for older output would come first otherwise).
            "compaction": {"keep_recent_tool_tokens": 10**9},
        }
        cfg_dir = isolated_home / ".config" / "ai-coding"
        cfg_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        (cfg_dir / "config.yaml").write_text(yaml.safe_dump(config))
        os.chmod(cfg_dir / "config.yaml", 0o600)
        proc = LoopProcess(short_dir / "loop.sock", tmp_path / "loop.log")
        yield proc, fake, workspace
        if proc.proc is not None and proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait()
    services.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_loop_killed_mid_compaction_reloads_every_step_and_the_previous_checkpoint(
        loop_proc: tuple[LoopProcess, FakeModelServer, Path]) -> None:
    proc, fake, workspace = loop_proc
    fake.load_script({"order": "first_match", "steps": [
        {"match": SUMMARY_MARKER, "text": FIRST_SUMMARY},  # the first compaction succeeds
        {"match": SUMMARY_MARKER, "fault": {"kind": "stall"}, "repeat": "forever"},  # the second hangs
        {"tool_calls": [{"name": "bash", "arguments": {"command": BIG_OUTPUT}}], "repeat": 60},
    ]})
    proc.start()
    channel, stub = proc.stub()
    sid = _open(stub, workspace).session_id
    conv = Conversation(stub, loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=sid, input="make outputs")))
    for _ in conv:
        if kinds(conv.events).count("compaction_started") == 2 and kinds(conv.events)[-1] == "compaction_started":
            break
    assert kinds(conv.events).count("compaction_ended") == 1
    assert proc.signal(signal.SIGKILL) == -signal.SIGKILL
    conv.cancel()
    channel.close()
    done = kinds(conv.events).count("tool_finished")

    session, warnings = SessionStore(workspace).load(sid)
    assert not [w for w in warnings if "corrupt" in w], warnings
    tools = [m for m in session.messages if m["role"] == "tool"]
    assert len(tools) >= done and all(len(m["content"]) > 19_000 for m in tools)  # every completed step
    state = CompactionState.from_json(session.compaction)
    assert state.checkpoint is not None and state.checkpoint.summary == FIRST_SUMMARY
    assert validate(session.messages, state) == (state, "")  # its anchor matches the reloaded record
    assert is_paired(build_view(session.messages, state))

    fake.load_script({"order": "first_match", "steps": [
        {"match": SUMMARY_MARKER, "text": "CHECKPOINT-TWO", "repeat": "forever"},
        {"match": "go on", "text": "resumed"}]})
    proc.start()
    channel, stub = proc.stub()
    assert _open(stub, workspace, sid).session_id == sid
    turn = Conversation(stub, loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=sid, input="go on")))
    end = finished(turn.drain())
    channel.close()
    assert status_name(end) == "completed" and end.text == "resumed"
    last = [r for r in fake.chat_requests if SUMMARY_MARKER not in r.last_message][-1].body["messages"]
    assert last[1]["content"].startswith("[checkpoint]") and "CHECKPOINT-" in last[1]["content"]
    assert fake.over_window == []
