"""The loop reports SERVING before it builds its session runtime, and a call that comes meanwhile
waits for it; a bad config still stops the start before SERVING."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import grpc
import pytest
from ai_coding.v1 import loop_pb2, loop_pb2_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.fake_model import FakeModelServer
from services.kernel.config import Config
from services.kernel.errors import ConfigError
from services.kernel.server import create_server, shutdown
from services.loop.main import build
from tests.service.loop.harness import ServiceThread, model_config


def test_building_the_loop_service_imports_no_session_module() -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           "from services.kernel.config import Config; import services.loop.main as m; "
                           "m.build(Config(data={'models': {'m': {'provider': 'generic', 'model': 'x', "
                           "'base_url': 'http://127.0.0.1:9/v1', 'api_key': 'k'}}}))"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "services.loop.main" in imported  # the check sees the imports at all
    assert not {"services.loop.session.runtime", "services.loop.servicer", "services.loop.turn.pipeline",
                "services.loop.model.client", "httpx2"} & imported


def test_a_bad_config_still_stops_the_start() -> None:
    with pytest.raises(ConfigError, match="hooks"):
        build(Config(data={"hooks": ["not", "a", "mapping"]}))


def test_a_call_before_the_runtime_is_built_waits_for_it(short_dir: Path, tmp_path: Path) -> None:
    release = threading.Event()
    with FakeModelServer([{"text": "hi", "repeat": "forever"}]) as fake:
        service = build(Config(data={**model_config(fake.url), "endpoints": {"tools": f"unix:{short_dir}/t.sock"}}))
        on_start = service.on_start
        assert on_start is not None

        async def held_start() -> None:  # the runtime's build, held until the test lets it go
            await asyncio.to_thread(release.wait, 30)
            await on_start()

        service.on_start = held_start
        host = ServiceThread()
        address = f"unix:{short_dir}/loop.sock"
        starting = asyncio.run_coroutine_threadsafe(create_server(address, service), host.loop)
        try:
            with grpc.insecure_channel(address) as channel:
                health = health_pb2_grpc.HealthStub(channel)
                status = health.Check(health_pb2.HealthCheckRequest(service="ai_coding.v1.AgentLoop"),
                                      timeout=30, wait_for_ready=True).status
                assert status == health_pb2.HealthCheckResponse.SERVING
                assert "runtime" not in service.extra  # SERVING, and the runtime is not built yet
                opened = loop_pb2_grpc.AgentLoopStub(channel).OpenSession.future(
                    loop_pb2.OpenSessionLoopRequest(workspace=str(tmp_path), auto_approve=True), timeout=60)
                with pytest.raises(grpc.FutureTimeoutError):
                    opened.result(timeout=0.5)  # waits for the runtime
                release.set()
                assert opened.result(timeout=60).session_id
                assert "runtime" in service.extra
        finally:
            release.set()
            running = starting.result(60)
            host.run(shutdown(running, 1.0))
            host.close()
