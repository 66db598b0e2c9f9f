"""The loop service killed with SIGKILL mid-turn, and stopped with SIGTERM mid-turn, as real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from ai_coding.v1 import loop_pb2, loop_pb2_grpc

from services.fake_model import FakeModelServer
from services.kernel.config import Config
from tests.service.loop.harness import Conversation, ServiceThread, finished, kinds, status_name

AI_CODING = str(Path(sys.executable).with_name("ai-coding"))


class LoopProcess:
    """``ai-coding serve loop`` as a child process, configured through the user config file."""

    def __init__(self, sock: Path, log: Path) -> None:
        self.sock = sock
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([AI_CODING, "serve", "loop"], stdout=out, stderr=out)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.sock.exists():
                channel = grpc.insecure_channel(f"unix:{self.sock}")
                try:
                    grpc.channel_ready_future(channel).result(timeout=1)
                    return
                except grpc.FutureTimeoutError:
                    pass
                finally:
                    channel.close()
            assert self.proc.poll() is None, self.log.read_text()
            time.sleep(0.05)
        raise AssertionError(f"loop service did not start: {self.log.read_text()}")

    def stub(self) -> tuple[grpc.Channel, loop_pb2_grpc.AgentLoopStub]:
        channel = grpc.insecure_channel(f"unix:{self.sock}")
        return channel, loop_pb2_grpc.AgentLoopStub(channel)

    def signal(self, sig: int) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)


@pytest.fixture
def stack(short_dir: Path, isolated_home: Path, tmp_path: Path) -> Iterator[tuple[LoopProcess, FakeModelServer, Path]]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    services = ServiceThread()
    from services.tools.main import build as build_tools

    tools_addr = f"unix:{short_dir}/tools.sock"
    services.serve(tools_addr, build_tools(Config(data={})))
    with FakeModelServer([]) as fake:
        config = {
            "models": {"fake": {"provider": "generic", "base_url": fake.url, "api_key": "k", "model": "fake-model"}},
            "default_model": "fake",
            "endpoints": {"loop": f"unix:{short_dir}/loop.sock", "tools": tools_addr},
            "loop": {"memory": False, "mcp": False},
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


def _open(stub: loop_pb2_grpc.AgentLoopStub, workspace: Path, sid: str = "") -> loop_pb2.OpenSessionLoopResponse:
    response: loop_pb2.OpenSessionLoopResponse = stub.OpenSession(loop_pb2.OpenSessionLoopRequest(
        workspace=str(workspace), session_id=sid, auto_approve=True), timeout=30)
    return response


def _start_then_kill(proc: LoopProcess, workspace: Path, text: str,
                     until: Callable[[list[loop_pb2.TurnEvent]], bool]) -> tuple[str, int]:
    """Start the loop, start a turn, SIGKILL the loop once ``until(events so far)``; returns the
    session id and the highest event number the client saw."""
    proc.start()
    channel, stub = proc.stub()
    sid = _open(stub, workspace).session_id
    conv = Conversation(stub, loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=sid, input=text)))
    for _ in conv:
        if until(conv.events):
            break
    assert proc.signal(signal.SIGKILL) == -signal.SIGKILL
    conv.cancel()
    channel.close()
    return sid, max(e.seq for e in conv.events)


def test_after_sigkill_mid_turn_the_session_loads_with_every_completed_step(
        stack: tuple[LoopProcess, FakeModelServer, Path]) -> None:
    proc, fake, workspace = stack
    fake.load_script([
        {"match": "do it", "tool_calls": [{"name": "bash", "arguments": {"command": "echo step-one-done"}}]},
        {"match": "step-one-done", "text": "thinking", "fault": {"kind": "stall", "after_chunks": 2}},
    ])
    # Killed when step 2 is being requested: step 1 and its tool batch are complete.
    sid, _ = _start_then_kill(proc, workspace, "do it", lambda events: kinds(events).count("context_assembled") == 2)

    proc.start()
    channel, stub = proc.stub()
    reopened = _open(stub, workspace, sid[:10])
    assert reopened.session_id == sid
    messages = json.loads(stub.GetSession(loop_pb2.GetSessionRequest(workspace=str(workspace), session_id=sid),
                                          timeout=10).messages_json)
    assert [m["role"] for m in messages][:3] == ["user", "assistant", "tool"]
    assert "step-one-done" in messages[2]["content"]
    assert messages[1]["toolCalls"][0]["name"] == "bash"
    assert reopened.last_seq > 0  # numbering continues after the restart
    channel.close()


def test_after_sigkill_a_client_that_saw_unsaved_events_still_gets_every_event_of_the_next_turn(
        stack: tuple[LoopProcess, FakeModelServer, Path]) -> None:
    proc, fake, workspace = stack
    fake.load_script([
        {"match": "tell me", "text": "one two three four five six seven eight nine ten eleven twelve",
         "chunk_chars": 4, "fault": {"kind": "stall", "after_chunks": 12}},
        {"match": "again", "text": "the second answer"},
    ])
    # Text deltas are streamed, not saved: the client holds numbers the disk never had.
    sid, seen = _start_then_kill(proc, workspace, "tell me", lambda events: kinds(events).count("text_delta") == 10)

    proc.start()
    channel, stub = proc.stub()
    reopened = _open(stub, workspace, sid)
    assert reopened.last_seq > seen  # numbering resumes past every number a client may hold
    turn = Conversation(stub, loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=sid, input="again")))
    started = turn.drain()
    assert status_name(finished(started)) == "completed"
    # The REPL's follower re-attaches with the last number it saw before the crash.
    follower = Conversation(stub, loop_pb2.ClientMessage(attach=loop_pb2.AttachTurn(session_id=sid, after_seq=seen)))
    followed = follower.drain()
    channel.close()
    assert [e.seq for e in followed] == [e.seq for e in started]
    names = kinds(followed)
    assert names[0] == "turn_started" and names[-1] == "turn_finished" and "events_skipped" not in names
    assert "".join(e.text_delta.text for e in followed if e.WhichOneof("event") == "text_delta") == "the second answer"


def test_sigterm_mid_turn_sends_a_final_failed_event_and_saves(
        stack: tuple[LoopProcess, FakeModelServer, Path]) -> None:
    proc, fake, workspace = stack
    fake.load_script([{"match": "hang", "text": "waiting", "fault": {"kind": "stall", "after_chunks": 2}}])
    proc.start()
    channel, stub = proc.stub()
    sid = _open(stub, workspace).session_id
    conv = Conversation(stub, loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=sid, input="hang on")))
    events = []
    for event in conv:
        events.append(event)
        if event.WhichOneof("event") == "text_delta":
            proc.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
    end = finished(events)
    assert status_name(end) == "failed" and end.reason == "service_stopping"
    assert proc.proc.wait(timeout=30) == 0  # type: ignore[union-attr]
    channel.close()
    snapshot = json.loads((workspace / ".ai-coding" / "sessions" / f"{sid}.json").read_text())
    assert [m["role"] for m in snapshot["messages"]] == ["user", "assistant"]
    assert snapshot["messages"][1]["content"] == "waiting"


def test_the_supervisor_restarts_a_sigkilled_loop_and_the_session_loads_every_completed_step(
        short_dir: Path, isolated_home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = dict(os.environ)
    with FakeModelServer([
        {"match": "do it", "tool_calls": [{"name": "bash", "arguments": {"command": "echo step-one-done"}}]},
        {"match": "step-one-done", "text": "thinking", "fault": {"kind": "stall", "after_chunks": 2}},
    ]) as fake:
        config = {"models": {"fake": {"provider": "generic", "base_url": fake.url, "api_key": "k",
                                      "model": "fake-model"}}, "default_model": "fake",
                  "loop": {"harvest": False}}
        cfg_dir = isolated_home / ".config" / "ai-coding"
        cfg_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        (cfg_dir / "config.yaml").write_text(yaml.safe_dump(config))
        os.chmod(cfg_dir / "config.yaml", 0o600)
        up = subprocess.run([AI_CODING, "up"], env=env, capture_output=True, timeout=120)
        assert up.returncode == 0, up.stdout.decode() + up.stderr.decode()
        try:
            before = _status(env)["loop"]
            sock = Path(env["AI_CODING_RUNTIME_DIR"]) / "loop.sock"
            channel = grpc.insecure_channel(f"unix:{sock}")
            stub = loop_pb2_grpc.AgentLoopStub(channel)
            sid = _open(stub, workspace).session_id
            conv = Conversation(stub, loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=sid, input="do it")))
            steps = 0
            for event in conv:
                steps += event.WhichOneof("event") == "context_assembled"
                if steps == 2:
                    break
            os.kill(int(before["pid"]), signal.SIGKILL)
            conv.cancel()
            channel.close()
            deadline = time.monotonic() + 60
            while True:
                after = _status(env).get("loop", {})
                if after.get("restarts") == 1 and after.get("health") == "SERVING":
                    break
                assert time.monotonic() < deadline, f"loop not restarted: {after}"
                time.sleep(0.2)
            channel = grpc.insecure_channel(f"unix:{sock}")
            stub = loop_pb2_grpc.AgentLoopStub(channel)
            reopened = _open(stub, workspace, sid)
            messages = json.loads(stub.GetSession(loop_pb2.GetSessionRequest(
                workspace=str(workspace), session_id=sid), timeout=10).messages_json)
            channel.close()
            assert reopened.message_count == 4  # and the note of the turn the crash ended
            assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
            assert "step-one-done" in messages[2]["content"]
            assert messages[3]["content"].startswith("[interrupted by a crash at step 2 of turn 1")
        finally:
            subprocess.run([AI_CODING, "down"], env=env, capture_output=True, timeout=120)


def _status(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([AI_CODING, "status", "--json"], env=env, capture_output=True, timeout=60)
    services: dict[str, Any] = json.loads(done.stdout)["services"]
    return services


def test_after_sigkill_mid_turn_the_next_open_marks_the_lost_turn_once(
        stack: tuple[LoopProcess, FakeModelServer, Path]) -> None:
    proc, fake, workspace = stack
    fake.load_script([
        {"match": "do it", "tool_calls": [{"name": "bash", "arguments": {"command": "echo step-one-done"}}]},
        {"match": "step-one-done", "text": "thinking", "fault": {"kind": "stall", "after_chunks": 2}},
    ])
    sid, _ = _start_then_kill(proc, workspace, "do it", lambda events: kinds(events).count("context_assembled") == 2)
    proc.start()
    channel, stub = proc.stub()
    reopened = _open(stub, workspace, sid)
    assert any("interrupted by a crash at step 2 of turn 1" in w for w in reopened.warnings), reopened.warnings
    messages = json.loads(stub.GetSession(loop_pb2.GetSessionRequest(workspace=str(workspace), session_id=sid),
                                          timeout=10).messages_json)
    assert messages[-1]["role"] == "assistant"
    assert messages[-1]["content"].startswith("[interrupted by a crash at step 2 of turn 1")
    again = _open(stub, workspace, sid)  # marked once: the mark is saved, the turn no longer open
    assert not any("interrupted by a crash" in w for w in again.warnings), again.warnings
    channel.close()
    assert proc.signal(signal.SIGTERM) == 0
    proc.start()
    channel, stub = proc.stub()
    third = _open(stub, workspace, sid)
    channel.close()
    assert not any("interrupted by a crash" in w for w in third.warnings), third.warnings
    show = subprocess.run([AI_CODING, "sessions", "show", sid, "-w", str(workspace)], capture_output=True,
                          text=True, timeout=60)
    assert "interrupted by a crash at step 2" in show.stdout, show.stdout + show.stderr
