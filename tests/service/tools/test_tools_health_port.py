"""`ai-coding serve tools` with a health port: a kubelet's native gRPC probe (plaintext, no token)
learns SERVING only when bubblewrap can start, so a pod whose sandbox is broken is never Ready."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

EXE = str(Path(sys.executable).parent / "ai-coding")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def probe(port: int, service: str = "") -> str:
    """What a kubelet `grpc:` probe asks: grpc.health.v1 Check, plaintext, no metadata."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            resp = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service), timeout=2)
        except grpc.RpcError as err:
            return str(err.code().name)
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))


def settled(port: int, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[0].decode()
        answer = probe(port)
        if answer in ("SERVING", "NOT_SERVING"):
            return answer
        time.sleep(0.1)
    raise AssertionError("the health port never answered")


@pytest.fixture
def serve_tools(isolated_home: Path, tmp_path: Path) -> Iterator[object]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(sandbox: str, port: int) -> subprocess.Popen[bytes]:
        config = tmp_path / "config.yaml"
        config.write_text(f"tools:\n  sandbox:\n{sandbox}")
        env = {**os.environ, "AI_CODING_CONFIG": str(config), "AI_CODING_HEALTH_PORT": str(port)}
        proc = subprocess.Popen([EXE, "serve", "tools"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)


def test_the_health_port_says_serving_when_bubblewrap_starts(serve_tools: object) -> None:
    port = free_port()
    proc = serve_tools("    self_test: true\n", port)  # type: ignore[operator]
    assert settled(port, proc) == "SERVING"
    assert probe(port, "ai_coding.v1.ToolRuntime") == "SERVING"
    # Health only: the tool service itself is not on this port.
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary("/ai_coding.v1.ToolRuntime/OpenSession")
        with pytest.raises(grpc.RpcError) as info:
            call(b"", timeout=2)
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0


def test_a_sandbox_that_cannot_start_keeps_the_service_not_serving(serve_tools: object, tmp_path: Path) -> None:
    # What runc's default seccomp profile does to bwrap in a pod: it cannot make its namespaces.
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    broken.chmod(0o755)
    port = free_port()
    proc = serve_tools(f"    self_test: true\n    bwrap: {broken}\n", port)  # type: ignore[operator]
    assert settled(port, proc) == "NOT_SERVING"
    time.sleep(0.5)
    assert probe(port, "ai_coding.v1.ToolRuntime") == "NOT_SERVING"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    log = (Path(os.environ["AI_CODING_RUNTIME_DIR"]) / "logs" / "tools.log").read_text()
    assert "self-test failed" in log and "No permissions to create new namespace" in log


def test_without_the_self_test_the_service_reports_serving_whatever_bwrap_does(
        serve_tools: object, tmp_path: Path) -> None:
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    port = free_port()
    proc = serve_tools(f"    bwrap: {broken}\n", port)  # type: ignore[operator]
    assert settled(port, proc) == "SERVING"


def test_a_health_port_that_is_not_a_number_stops_the_service_with_one_line(
        isolated_home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "AI_CODING_HEALTH_PORT": "health"}
    proc = subprocess.run([EXE, "serve", "tools"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert proc.stdout.strip().splitlines() == [
        "ai-coding serve tools: AI_CODING_HEALTH_PORT is 'health', not a port number "
        "Set it to a free TCP port (1-65535), or unset it."]
