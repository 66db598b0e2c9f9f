"""The loop's shutdown against a blackholed OTLP collector (a real socket that accepts and never
answers): SIGTERM ends the loop at the exporter's shutdown deadline, not at the collector's timeout,
and the log says which deadline ended the sending."""

from __future__ import annotations

import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ai_coding.v1 import loop_pb2, loop_pb2_grpc

from services.fake_model import FakeModelServer
from services.loop.tracing.live import SHUTDOWN_DEADLINE_S
from tests.service.loop.harness import Conversation, finished, status_name
from tests.support.processes import ServiceProcess, write_user_config

COLLECTOR_TIMEOUT_S = 60.0  # what the old shutdown waited for, per pending export


@pytest.fixture
def blackhole() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)  # connections complete in the backlog; nothing is ever read or answered
    yield server.getsockname()[1]
    server.close()


def test_sigterm_with_a_blackholed_collector_exits_at_the_shutdown_deadline(
        short_dir: Path, isolated_home: Path, tmp_path: Path, blackhole: int) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeModelServer([{"match": "hello", "text": "hi", "repeat": "forever"}]) as fake:
        write_user_config(isolated_home, {
            "models": {"fake": {"provider": "generic", "base_url": fake.url, "api_key": "k", "model": "fake-model"}},
            "default_model": "fake",
            "endpoints": {"loop": f"unix:{short_dir}/loop.sock", "tools": f"unix:{short_dir}/none.sock"},
            "loop": {"memory": False, "mcp": False, "harvest": False, "traces": True},
            "tracing": {"otlp": {"endpoint": f"http://127.0.0.1:{blackhole}/v1/traces",
                                 "timeout_seconds": COLLECTOR_TIMEOUT_S, "batch_delay_ms": 50}},
        })
        loop = ServiceProcess("loop", short_dir / "loop.sock", tmp_path / "loop.log")
        loop.start()
        try:
            channel = loop.channel()
            stub = loop_pb2_grpc.AgentLoopStub(channel)
            for _ in range(2):  # the first batch hangs on the collector; the second waits in the queue
                sid = stub.OpenSession(loop_pb2.OpenSessionLoopRequest(workspace=str(workspace),
                                                                       auto_approve=True), timeout=60).session_id
                events = Conversation(stub, loop_pb2.ClientMessage(start=loop_pb2.StartTurn(
                    session_id=sid, input="hello")), timeout=60).drain()
                assert status_name(finished(events)) == "completed"
            channel.close()
            time.sleep(0.5)  # the exporter is now blocked on the collector
            assert loop.proc is not None
            began = time.monotonic()
            loop.proc.send_signal(signal.SIGTERM)
            code = loop.proc.wait(timeout=COLLECTOR_TIMEOUT_S * 2)
            took = time.monotonic() - began
        finally:
            loop.stop()
    log = (short_dir / "run" / "logs" / "loop.log").read_text()
    print(f"\nloop exit after SIGTERM: {took:.2f} s (shutdown deadline {SHUTDOWN_DEADLINE_S:g} s)")
    assert code == 0
    assert took < COLLECTOR_TIMEOUT_S / 2, took  # ended by our deadline, not the collector's timeout
    assert f"stopped at its {SHUTDOWN_DEADLINE_S:g} s shutdown deadline" in log, log[-2000:]
