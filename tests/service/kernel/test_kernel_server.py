"""The kernel server bootstrap for real: TCP with TLS and a token, health, reflection, SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from clients.cli.runtime import wait_until
from services.kernel.channels import aio_channel, check_health
from services.kernel.endpoints import PROTO_SERVICE, AuthSettings, Endpoint, parse_endpoint
from services.kernel.errors import EndpointError
from services.kernel.server import ServiceDef, create_server, shutdown

HERE = Path(__file__).parent
TOKEN = "s3cret-deployment-token"


def _service() -> ServiceDef:
    return ServiceDef(name="memory", proto_services=[PROTO_SERVICE["memory"]], register=lambda server: None)


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "key.pem"),
         "-out", str(d / "cert.pem"), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )
    return str(d / "cert.pem"), str(d / "key.pem")


async def _health_over_tls(cert: tuple[str, str], client_token: str) -> tuple[grpc.StatusCode, str]:
    server_auth = AuthSettings(token=TOKEN, tls_cert=cert[0], tls_key=cert[1])
    running = await create_server(Endpoint("memory", "tcp", host="127.0.0.1", port=0, auth=server_auth), _service())
    try:
        port = int(running.address.rsplit(":", 1)[1])
        client = Endpoint("memory", "tcp", host="127.0.0.1", port=port,
                          auth=AuthSettings(token=client_token, tls_ca=cert[0], server_name="localhost"))
        async with aio_channel(client) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            try:
                resp = await stub.Check(health_pb2.HealthCheckRequest(service=PROTO_SERVICE["memory"]), timeout=10)
            except grpc.aio.AioRpcError as err:
                return err.code(), err.details() or ""
            return grpc.StatusCode.OK, health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
    finally:
        await shutdown(running, grace=1)


def test_a_tcp_call_without_a_token_is_unauthenticated(cert: tuple[str, str]) -> None:
    code, _ = asyncio.run(_health_over_tls(cert, client_token=""))
    assert code == grpc.StatusCode.UNAUTHENTICATED


def test_a_tcp_call_with_a_wrong_token_is_unauthenticated(cert: tuple[str, str]) -> None:
    code, _ = asyncio.run(_health_over_tls(cert, client_token="not-the-token"))
    assert code == grpc.StatusCode.UNAUTHENTICATED


def test_a_tcp_call_with_the_right_token_over_tls_is_served(cert: tuple[str, str]) -> None:
    assert asyncio.run(_health_over_tls(cert, client_token=TOKEN)) == (grpc.StatusCode.OK, "SERVING")


def test_a_tcp_endpoint_without_tls_and_a_token_is_refused_before_listening() -> None:
    async def attempt() -> None:
        await create_server(parse_endpoint("tools", "tcp://127.0.0.1:0"), _service())

    with pytest.raises(EndpointError) as info:
        asyncio.run(attempt())
    assert info.value.reason == "tcp_requires_tls"
    assert "without TLS and a token" in str(info.value)


def test_reflection_lists_the_service_and_health(short_dir: Path) -> None:
    async def listed() -> list[str]:
        running = await create_server(f"unix:{short_dir}/m.sock", _service())
        try:
            async with grpc.aio.insecure_channel(f"unix:{short_dir}/m.sock") as channel:
                stub = reflection_pb2_grpc.ServerReflectionStub(channel)
                call = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
                async for resp in call:
                    return [s.name for s in resp.list_services_response.service]
                return []
        finally:
            await shutdown(running, grace=1)

    names = asyncio.run(listed())
    assert {"ai_coding.v1.Memory", "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= set(names)


def _minimal_memory(short_dir: Path, **knobs: str) -> tuple[subprocess.Popen[str], Endpoint]:
    """minimal_service.py as the memory service (its runtime dir: ``short_dir/run``), drain marker set."""
    env = {**os.environ, "AIC_TEST_SHUTDOWN_MARKER": str(short_dir / "drained"), **knobs}
    proc = subprocess.Popen([sys.executable, str(HERE / "minimal_service.py"), "memory"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, Endpoint("memory", "unix", path=str(short_dir / "run" / "memory.sock"))


def test_sigterm_turns_health_not_serving_runs_the_drain_hook_and_exits_cleanly(
    isolated_home: Path, short_dir: Path
) -> None:
    rdir = short_dir / "run"
    proc, endpoint = _minimal_memory(short_dir, AIC_TEST_DRAIN_SECONDS="4")
    try:
        assert wait_until(lambda: check_health(endpoint, PROTO_SERVICE["memory"]) == "SERVING", 30, 0.1)
        proc.send_signal(signal.SIGTERM)
        assert wait_until(lambda: check_health(endpoint, PROTO_SERVICE["memory"]) == "NOT_SERVING", 10, 0.05)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert (short_dir / "drained.memory").read_text() == "drained"
    assert not Path(endpoint.path).exists()
    log = (rdir / "logs" / "memory.log").read_text()
    assert "memory shutting down" in log


def test_sigterm_while_on_start_runs_after_serving_is_a_graceful_stop(isolated_home: Path, short_dir: Path) -> None:
    proc, endpoint = _minimal_memory(short_dir, AIC_TEST_START_SECONDS="6")
    try:
        assert wait_until(lambda: check_health(endpoint, PROTO_SERVICE["memory"]) == "SERVING", 30, 0.1)
        proc.send_signal(signal.SIGTERM)  # on_start still sleeps
        # NOT_SERVING at once, not once on_start is done: a client asking now must not start work
        # on a service that is going (its supervisor was killed and PDEATHSIG sent this TERM).
        assert wait_until(lambda: check_health(endpoint, PROTO_SERVICE["memory"]) == "NOT_SERVING", 3, 0.05)
        assert check_health(endpoint, "") == "NOT_SERVING"
        assert proc.poll() is None  # still in on_start
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out  # not -15: the signal was handled
    assert (short_dir / "drained.memory").read_text() == "drained"
    assert not Path(endpoint.path).exists()


def test_a_service_on_demand_stops_when_idle_but_not_while_it_holds_something(short_dir: Path) -> None:
    from services.kernel.server import stop_when_idle

    async def scenario() -> tuple[bool, float]:
        held = [True]
        service = ServiceDef(name="mcp_gateway", proto_services=[PROTO_SERVICE["mcp_gateway"]],
                             register=lambda server: None, busy=lambda: held[0])
        running = await create_server(f"unix://{short_dir}/gw.sock", service)
        stop = asyncio.Event()
        watch = asyncio.ensure_future(stop_when_idle(running, 0.2, stop))
        try:
            await asyncio.sleep(1.0)  # five idle periods, but a server is held
            stopped_while_held = stop.is_set()
            held[0] = False
            began = asyncio.get_running_loop().time()
            await asyncio.wait_for(stop.wait(), 5)
            return stopped_while_held, asyncio.get_running_loop().time() - began
        finally:
            watch.cancel()
            await shutdown(running, grace=1)

    stopped_while_held, after = asyncio.run(scenario())
    assert not stopped_while_held
    assert after < 2.0


def test_a_service_started_on_demand_takes_over_only_the_supervisors_socket(short_dir: Path) -> None:
    import socket as socketlib

    from services.kernel.on_demand import socket_identity

    path = short_dir / "memory.sock"
    squatter = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
    squatter.bind(str(path))
    squatter.listen(1)

    async def bind(take_over: str | None) -> str:
        running = await create_server(f"unix://{path}", _service(), take_over=take_over)
        await shutdown(running, grace=1)
        return running.address

    try:
        with pytest.raises(EndpointError, match="already in use"):
            asyncio.run(bind("1:2:3"))  # not the socket that is there
        assert asyncio.run(bind(socket_identity(path))) == f"unix://{path}"
    finally:
        squatter.close()
