"""Every documented numeric config key at 0, 1, -1 and a huge value, read by the real services.

Each service starts as a real process on a user config holding all of those keys at the one
edge value; none may exit. The loop names each refused key in OpenSession's warnings and still
runs a turn; the tools service does too; the memory service answers its health check.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ai_coding.v1 import loop_pb2, loop_pb2_grpc

from services.fake_model import FakeModelServer
from services.kernel.config_ranges import RANGES, range_for
from tests.service.loop.harness import Conversation, finished, status_name
from tests.support.processes import HealthProbe, ServiceProcess, write_user_config

EDGES = {"zero": 0, "one": 1, "negative": -1, "huge": 10**30}
# Read by the CLI (supervisor) or per MCP server entry (tests/unit/mcp_gateway), not by these three.
NOT_HERE = ("supervisor.", "mcp.", "compaction.models.")
# Also checked against other keys (max_messages must exceed snip_keep_head + snip_keep_tail).
CROSS_CHECKED = {"compaction.max_messages"}


def _keys() -> list[str]:
    return [k.replace("models.*.", "models.fake.") for k in RANGES if not k.startswith(NOT_HERE)]


def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = out
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


@pytest.fixture
def stack(short_dir: Path, isolated_home: Path, tmp_path: Path) -> Iterator[tuple[Path, FakeModelServer, Path]]:
    with FakeModelServer([{"match": "hello", "text": "hi there", "repeat": "forever"}]) as fake:
        yield short_dir, fake, tmp_path


@pytest.mark.parametrize("edge", list(EDGES), ids=list(EDGES))
def test_every_numeric_key_at_an_edge_value_starts_every_service_and_names_each_refused_key(
        stack: tuple[Path, FakeModelServer, Path], isolated_home: Path, edge: str) -> None:
    short_dir, fake, tmp_path = stack
    value = EDGES[edge]
    keys = _keys()
    config = _nested({key: value for key in keys})
    config["models"]["fake"].update({"provider": "generic", "base_url": fake.url, "api_key": "k",
                                     "model": "fake-model"})
    config["default_model"] = "fake"
    config["loop"].update({"memory": False, "mcp": False, "harvest": False, "traces": True})
    config["tracing"]["otlp"]["endpoint"] = "http://127.0.0.1:9/v1/traces"  # built at start, never reached
    config["endpoints"] = {name: f"unix:{short_dir}/{name}.sock" for name in ("loop", "tools", "memory")}
    write_user_config(isolated_home, config)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    services = [ServiceProcess(name, short_dir / f"{name}.sock", tmp_path / f"{name}.log")
                for name in ("tools", "memory", "loop")]
    try:
        for service in services:
            service.start()
        loop = services[2]
        channel = loop.channel()
        stub = loop_pb2_grpc.AgentLoopStub(channel)
        opened = stub.OpenSession(loop_pb2.OpenSessionLoopRequest(workspace=str(workspace), auto_approve=True),
                                  timeout=60)
        events = Conversation(stub, loop_pb2.ClientMessage(start=loop_pb2.StartTurn(
            session_id=opened.session_id, input="hello")), timeout=120).drain()
        channel.close()
        with HealthProbe(services[1].sock, interval=0.01) as memory_health:
            while not memory_health.latencies:
                pass
        assert not memory_health.failures
        for service in services:
            assert service.proc is not None and service.proc.poll() is None, service.log.read_text()[-2000:]
    finally:
        for service in services:
            service.stop()
    warnings = "\n".join(opened.warnings)
    refused = [k for k in keys if not range_for(k).holds(value) and not k.startswith("memory.")]
    accepted = [k for k in keys if range_for(k).holds(value) and k not in CROSS_CHECKED]
    missing = [k for k in refused if f"`{k}`" not in warnings]
    assert not missing, f"not named: {missing}\n{warnings}"
    assert not [k for k in accepted if f"`{k}`" in warnings], warnings
    assert status_name(finished(events)) in ("completed", "max_iterations"), finished(events)
    memory_refused = [k for k in keys if k.startswith("memory.") and not range_for(k).holds(value)]
    logged = (short_dir / "run" / "logs" / "memory.log").read_text()
    assert all(f"`{k}`" in logged for k in memory_refused), (memory_refused, logged[-2000:])
