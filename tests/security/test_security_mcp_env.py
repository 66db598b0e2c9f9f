"""A stdio MCP server the gateway starts receives no model key: neither the conventional provider
variables nor the variable the user's model entry names, even though the gateway has them all.

`ai-coding serve mcp_gateway` runs as its own process; the server is our demo MCP server behind a
shell that first writes its whole environment to a file, so every variable it got is seen.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import grpc
import pytest
import yaml
from ai_coding.v1 import mcp_gateway_pb2 as pb
from ai_coding.v1 import mcp_gateway_pb2_grpc

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "tests" / "mcp_servers" / "demo_server.py"
AI_CODING = str(Path(sys.executable).parent / "ai-coding")


@pytest.mark.slow
def test_a_stdio_mcp_server_gets_no_model_key_from_the_gateways_environment(
        isolated_home: Path, tmp_path: Path) -> None:
    secret = f"sk-model-{uuid.uuid4().hex}"
    dump = tmp_path / "server-env.txt"
    wrapped = f"env > {dump}; exec {sys.executable} {DEMO} stdio"
    config = isolated_home / "cfg.yaml"
    config.write_text(yaml.safe_dump({
        "models": {"main": {"provider": "generic", "model": "m", "base_url": "http://127.0.0.1:9/v1",
                            "api_key": "${MY_MODEL_KEY}"}},
        "mcp": {"servers": [{"name": "probe", "type": "local", "command": ["sh", "-c", wrapped],
                             "environment": {"PROBE_SETTING": "visible-on-purpose"}}]}}))
    env = {**os.environ, "AI_CODING_CONFIG": str(config), "MY_MODEL_KEY": secret, "OPENAI_API_KEY": secret,
           "DEEPSEEK_API_KEY": secret, "DASHSCOPE_API_KEY": secret, "AI_CODING_API_KEY": secret}
    proc = subprocess.Popen([AI_CODING, "serve", "mcp_gateway"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    socket_path = Path(os.environ["AI_CODING_RUNTIME_DIR"]) / "mcp_gateway.sock"
    try:
        deadline = time.monotonic() + 60
        connected = False
        while not connected:
            assert proc.poll() is None, f"the gateway exited with {proc.returncode}"
            assert time.monotonic() < deadline, "the probe server never connected"
            time.sleep(0.1)
            if not socket_path.exists():
                continue
            with grpc.insecure_channel(f"unix:{socket_path}") as channel:
                try:
                    resp = mcp_gateway_pb2_grpc.McpGatewayStub(channel).ListServers(pb.ListServersRequest(),
                                                                                     timeout=5)
                except grpc.RpcError:
                    continue
                connected = any(s.name == "probe" and s.state == pb.SERVER_STATE_CONNECTED for s in resp.servers)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    seen = dump.read_text()
    assert "PROBE_SETTING=visible-on-purpose" in seen  # the control: the dump is the server's environment
    assert secret not in seen
