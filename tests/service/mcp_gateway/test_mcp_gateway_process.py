"""`ai-coding serve mcp_gateway` as a real process: SIGTERM leaves no MCP server behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import yaml
from ai_coding.v1 import mcp_gateway_pb2 as pb
from ai_coding.v1 import mcp_gateway_pb2_grpc

from .conftest import demo_server, everything_server

AI_CODING = str(Path(sys.executable).parent / "ai-coding")


def descendants(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (by parent pid, walking /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_gateway_with_servers(home: Path) -> tuple[subprocess.Popen[bytes], Path, set[int]]:
    """The gateway as a real process with three connected stdio servers and one still connecting
    ("mute" never answers its handshake and ignores stdin); its server processes."""
    config = home / "cfg.yaml"
    config.write_text(yaml.safe_dump({"mcp": {"servers": [everything_server(), demo_server("demo"),
                                                          demo_server("demo2"), demo_server("mute", "mute")]}}))
    env = {**os.environ, "AI_CODING_CONFIG": str(config)}
    proc = subprocess.Popen([AI_CODING, "serve", "mcp_gateway"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    socket_path = Path(os.environ["AI_CODING_RUNTIME_DIR"]) / "mcp_gateway.sock"
    deadline = time.monotonic() + 60
    connected: set[str] = set()
    while connected != {"everything", "demo", "demo2"}:
        assert proc.poll() is None, f"the gateway exited with {proc.returncode}"
        assert time.monotonic() < deadline, f"servers never all connected: {connected}"
        time.sleep(0.1)
        if not socket_path.exists():
            continue
        with grpc.insecure_channel(f"unix:{socket_path}") as channel:
            stub = mcp_gateway_pb2_grpc.McpGatewayStub(channel)
            try:
                resp = stub.ListServers(pb.ListServersRequest(), timeout=5)
            except grpc.RpcError:
                continue
            connected = {s.name for s in resp.servers if s.state == pb.SERVER_STATE_CONNECTED}
    children = descendants(proc.pid)
    assert len(children) >= 4, f"expected four server processes under the gateway, saw {children}"
    return proc, socket_path, children


def assert_all_gone(children: set[int], within: float) -> None:
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = [pid for pid in children if alive(pid)]
    assert not survivors, f"server processes outlived the gateway: {survivors}"


def test_sigterm_to_the_gateway_process_leaves_no_orphan_server_process(isolated_home: Path,
                                                                        short_dir: Path) -> None:
    proc, socket_path, children = start_gateway_with_servers(isolated_home)
    try:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert_all_gone(children, within=10)
        assert not socket_path.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigkill_to_the_gateway_process_takes_its_server_processes_with_it(isolated_home: Path,
                                                                           short_dir: Path) -> None:
    """No chance to close anything: the kernel ends each server (a busy one, or "mute", which
    ignores the end of its stdin, would otherwise run on, adopted by init)."""
    proc, _, children = start_gateway_with_servers(isolated_home)
    try:
        proc.kill()
        proc.wait(timeout=10)
        assert_all_gone(children, within=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in children:  # what the assertion found alive must not outlive the test either
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
