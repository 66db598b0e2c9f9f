"""Live OTLP/HTTP export from a real loop service to a real receiver (an HTTP server of this test
that decodes ``ExportTraceServiceRequest`` with the official opentelemetry-proto types).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from services.fake_model import FakeModelServer
from services.kernel.config import load_config
from services.loop.tracing.report import session_reports
from services.loop.tracing.spans import session_tree, span_id, trace_id
from services.loop.tracing.store import find_session
from tests.service.loop.harness import LoopStack, finished, model_config, status_name


class Receiver:
    """An OTLP/HTTP traces endpoint on 127.0.0.1 that keeps every span it decodes."""

    def __init__(self, port: int = 0, spans: list[Any] | None = None) -> None:
        received: list[Any] = [] if spans is None else spans
        self.spans = received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        received.extend(scope.spans)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _stack(short_dir: Path, workspace: Path, fake: FakeModelServer, endpoint: str) -> LoopStack:
    config = model_config(fake.url)
    config["tracing"] = {"otlp": {"endpoint": endpoint, "timeout_seconds": 2.0, "batch_delay_ms": 50}}
    return LoopStack(short_dir, workspace, fake, config, with_tools=False)


def _wait(condition: Any, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


SCRIPT = [{"tool_calls": [{"name": "todo_write", "arguments": {"add": [{"content": "look"}]}}],
           "usage": {"prompt_tokens": 900, "completion_tokens": 12, "cached_tokens": 400}},
          {"text": "all done", "usage": {"prompt_tokens": 950, "completion_tokens": 5}}]


def test_a_finished_turn_reaches_the_collector_as_a_span_tree_with_the_export_ids(
        short_dir: Path, workspace: Path, isolated_home: Path, receiver: Receiver) -> None:
    with FakeModelServer(SCRIPT) as fake:
        stack = _stack(short_dir, workspace, fake, receiver.url)
        try:
            sid, events = stack.turn("plan one thing")
            assert status_name(finished(events)) == "completed"
            assert _wait(lambda: len(receiver.spans) >= 4), [s.name for s in receiver.spans]
        finally:
            stack.close()
    spans = {s.name: s for s in receiver.spans}
    turn = spans["invoke_agent ai-coding"]
    assert turn.trace_id == trace_id(sid) and turn.span_id == span_id(sid, 1, "turn")
    assert turn.parent_span_id == span_id(sid, 0, "session")
    children = [s for s in receiver.spans if s.parent_span_id == turn.span_id]
    assert sorted(s.name for s in children) == ["chat fake-model", "chat fake-model", "execute_tool todo_write"]
    step = next(s for s in children if s.name == "chat fake-model")
    attrs = {a.key: a.value for a in step.attributes}
    assert attrs["gen_ai.usage.input_tokens"].int_value == 900 and attrs["gen_ai.operation.name"].string_value == "chat"
    assert all(s.start_time_unix_nano <= s.end_time_unix_nano for s in receiver.spans)


def test_with_the_collector_down_turns_complete_and_one_degraded_event_says_so(
        short_dir: Path, workspace: Path, isolated_home: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens here once the socket closes
    with FakeModelServer([{"text": "one"}, {"text": "two"}]) as fake:
        stack = _stack(short_dir, workspace, fake, f"http://127.0.0.1:{closed}/v1/traces")
        try:
            sid, first = stack.turn("first")
            assert status_name(finished(first)) == "completed"
            rt = stack.runtime.sessions[sid]
            exporter = stack.runtime.deps.span_export

            def degraded() -> list[Any]:
                return [e for e in rt.events.since(0) if e.kind == "degraded" and
                        e.data["component"] == "trace_export"]

            assert _wait(lambda: len(degraded()) == 1)
            _, second = stack.turn("second", session_id=sid)
            assert status_name(finished(second)) == "completed"
            assert _wait(lambda: exporter.failures >= 2)  # the second turn's export failed too
            time.sleep(0.3)
            assert len(degraded()) == 1 and f"127.0.0.1:{closed}" in degraded()[0].data["reason"]
        finally:
            stack.close()


def test_a_project_file_cannot_point_live_export_at_an_endpoint(tmp_path: Path, isolated_home: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "ai-coding.yaml").write_text("tracing:\n  otlp:\n    endpoint: http://evil.example/v1/traces\n")
    config = load_config(project, user_data={})
    assert config.get("tracing.otlp.endpoint") is None
    assert any("tracing.otlp" in w and "user config" in w for w in config.warnings)


def test_spans_of_a_turn_run_while_the_collector_restarted_arrive_once_it_is_back_and_the_root_at_stop(
        short_dir: Path, workspace: Path, isolated_home: Path) -> None:
    received: list[Any] = []
    first = Receiver(spans=received)
    port = first.server.server_address[1]
    script = [{"tool_calls": [{"name": "todo_write", "arguments": {"add": [{"content": "look"}]}}]},
              {"text": "one"}, {"text": "two"}, {"text": "three"}]
    with FakeModelServer(script) as fake:
        stack = _stack(short_dir, workspace, fake, first.url)
        exporter = stack.runtime.deps.span_export
        try:
            sid, events = stack.turn("first")
            assert status_name(finished(events)) == "completed"
            assert _wait(lambda: len(received) >= 4)
            first.close()  # the collector goes away ...
            for text in ("second", "third"):
                _, events = stack.turn(text, session_id=sid)
                assert status_name(finished(events)) == "completed"
            assert _wait(lambda: exporter.failures >= 1)
            assert exporter.queued >= 4  # held, not dropped
            back = Receiver(port=port, spans=received)  # ... and comes back on the same address
            try:
                assert _wait(lambda: exporter.queued == 0, 30)
            finally:
                stack.close()  # the loop stops: the session's root span goes out
                back.close()
        finally:
            first.server.server_close()
    ref = find_session(workspace, sid)
    expected = {s.span_id for s in session_tree(sid, session_reports(ref))}
    got = {s.span_id for s in received}
    assert expected <= got, f"{len(expected - got)} span(s) lost"
    assert span_id(sid, 0, "session") in got
    assert exporter.dropped == 0
