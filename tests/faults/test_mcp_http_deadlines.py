"""Remote MCP servers that hang end at their deadline, named, and stall nothing else.

Our demo server runs over streamable HTTP behind a proxy (tests/support/stalling_proxy.py) that
stalls chosen requests for real: it accepts and never answers, answers the headers and then
nothing, or stops an SSE event mid-line; our OAuth server likewise, with its metadata or token
endpoint stalled. Each case ends within the server's documented deadline (``timeout.startup``,
``timeout.catalog``, ``timeout.execution``) with a reason naming the server and that key; a stdio
server's calls and the gateway's health check answer meanwhile; the stalled connection is closed
by the gateway (the work ended, not only the wait).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from ai_coding.v1 import mcp_gateway_pb2 as pb
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.service.mcp_gateway.conftest import (  # noqa: F401  (fixtures)
    OAUTH,
    Gw,
    demo_server,
    free_port,
    gateway,
    http_demo,
    wait_port,
)
from tests.support.stalling_proxy import Request, Rule, Stall, StallingProxy

CONNECTED, FAILED = pb.SERVER_STATE_CONNECTED, pb.SERVER_STATE_FAILED


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


@pytest.fixture
def proxied(http_demo: str) -> Iterator[Callable[[Rule], StallingProxy]]:  # noqa: F811
    proxies: list[StallingProxy] = []

    def start(rule: Rule) -> StallingProxy:
        proxy = StallingProxy(_port(http_demo), rule).__enter__()
        proxies.append(proxy)
        return proxy

    yield start
    for proxy in proxies:
        proxy.__exit__()


HEALTH_BOUND_S = 1.0  # below every stall this file makes (the shortest, timeout.execution, is 1.5 s)


def _calls(tool: str) -> Callable[[Request], bool]:
    return lambda r: b'"tools/call"' in r.body and f'"name":"{tool}"'.encode() in r.body.replace(b" ", b"")


def _is(method: str) -> Callable[[Request], bool]:
    return lambda r: f'"method":"{method}"'.encode() in r.body.replace(b" ", b"")


async def _meanwhile_others_answer(gw: Gw, socket: str, until: asyncio.Future[Any]) -> None:
    """While ``until`` runs: the stdio server's calls answer, and health well inside the stall each time.

    A gateway whose event loop the stall blocked would answer only when the stall ends (1.5 s at the
    shortest here), so each answer must come in under ``HEALTH_BOUND_S``; a tighter bound measures the
    machine's load, not the gateway (a 0.36 s answer under a loaded CI failed a 0.1 s bound).
    """
    async with grpc.aio.insecure_channel(socket) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        rounds = 0
        while not until.done():
            started = time.monotonic()
            answer = await health.Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
            took = time.monotonic() - started
            assert took < HEALTH_BOUND_S, f"the gateway's health check stalled ({took:.2f} s)"
            _, echoed = await gw.call("fine", "echo", json.dumps({"text": f"round {rounds}"}))
            assert echoed.ok and f"round {rounds}" in echoed.output
            rounds += 1
            await asyncio.sleep(0.1)
        assert rounds >= 3, "the stall ended before the other server was tried"


async def _another_failed_attempt(gw: Gw, name: str) -> pb.ServerStatus:
    """Wait for the server's next attempt (it stays failed while it retries) to fail too."""
    before = (await gw.servers())[name].attempts
    deadline = time.monotonic() + 40
    while (status := (await gw.servers())[name]).attempts <= before or status.state != FAILED:
        assert time.monotonic() < deadline, f"{name} made no further attempt: {status}"
        await asyncio.sleep(0.05)
    return status


async def _closed(proxy: StallingProxy, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while proxy.open_stalls and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return proxy.open_stalls == 0 and bool(proxy.stalled)


@pytest.mark.parametrize("stall", [Stall.SILENT, Stall.HEADERS_ONLY])
def test_a_handshake_that_never_completes_fails_at_timeout_startup_naming_it(
        gateway: Callable[..., Any], proxied: Callable[[Rule], StallingProxy], short_dir: Any,  # noqa: F811
        stall: Stall) -> None:
    proxy = proxied(lambda r: stall if _is("initialize")(r) else None)

    async def scenario() -> None:
        servers = [{"name": "hang", "type": "remote", "url": proxy.url(), "timeout": {"startup": 4000}},
                   demo_server("fine")]
        started = time.monotonic()
        async with gateway(servers) as gw:
            status = await gw.wait_state("hang", FAILED, timeout=30)
            assert time.monotonic() - started < 4.0 + 3.0
            await gw.wait_state("fine", CONNECTED)
            # The next attempt stalls the same way: the other server and health answer all through it.
            retrying = asyncio.ensure_future(_another_failed_attempt(gw, "hang"))
            await _meanwhile_others_answer(gw, f"unix:{short_dir}/gw.sock", retrying)
            status = await retrying
            assert "within 4s" in status.reason and "timeout.startup" in status.reason, status.reason
            assert "hang" in status.degraded_reason, status.degraded_reason
            assert await _closed(proxy), "the stalled handshake's connection stayed open"

    asyncio.run(scenario())


@pytest.mark.parametrize("stall", [Stall.HEADERS_ONLY, Stall.SSE_MID_EVENT])
def test_a_tool_list_that_stalls_fails_at_timeout_catalog_naming_it(
        gateway: Callable[..., Any], proxied: Callable[[Rule], StallingProxy], stall: Stall) -> None:  # noqa: F811
    proxy = proxied(lambda r: stall if _is("tools/list")(r) else None)

    async def scenario() -> None:
        servers = [{"name": "lister", "type": "remote", "url": proxy.url(), "timeout": {"catalog": 1000}}]
        async with gateway(servers) as gw:
            status = await gw.wait_state("lister", FAILED, timeout=30)
            assert "within 1s" in status.reason and "timeout.catalog" in status.reason, status.reason
            assert await _closed(proxy), "the stalled tools/list connection stayed open"

    asyncio.run(scenario())


@pytest.mark.parametrize("stall", [Stall.SILENT, Stall.HEADERS_ONLY, Stall.SSE_MID_EVENT])
def test_a_call_whose_answer_stalls_ends_at_timeout_execution_and_the_turn_can_go_on(
        gateway: Callable[..., Any], proxied: Callable[[Rule], StallingProxy], short_dir: Any,  # noqa: F811
        stall: Stall) -> None:
    proxy = proxied(lambda r: stall if _calls("echo")(r) else None)

    async def scenario() -> None:
        servers = [{"name": "stall", "type": "remote", "url": proxy.url(), "timeout": {"execution": 1500}},
                   demo_server("fine")]
        async with gateway(servers) as gw:
            await gw.wait_state("stall", CONNECTED)
            await gw.wait_state("fine", CONNECTED)
            started = time.monotonic()
            call = asyncio.ensure_future(gw.call("stall", "echo", '{"text": "x"}'))
            await _meanwhile_others_answer(gw, f"unix:{short_dir}/gw.sock", call)
            _, result = await call
            assert time.monotonic() - started < 1.5 + 2.0
            assert not result.ok and result.error.code == "tool_timeout" and result.limit_hit == "timeout"
            assert "stall__echo" in result.output and "timeout.execution" in result.output, result.output
            assert await _closed(proxy), "the stalled call's connection stayed open"
            _, after = await gw.call("stall", "add", '{"a": 2, "b": 3}')  # the same server still serves
            assert after.ok and "5" in after.output, after.output

    asyncio.run(scenario())


@contextlib.contextmanager
def _guarded_behind(rule: Rule) -> Iterator[StallingProxy]:
    """Our OAuth server behind the proxy (its metadata names the proxy's address)."""
    upstream = free_port()
    with StallingProxy(upstream, rule) as proxy:
        proc = subprocess.Popen([sys.executable, str(OAUTH), str(upstream), str(proxy.port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(upstream, proc)
            yield proxy
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@pytest.mark.parametrize("endpoint", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization"])
def test_an_oauth_endpoint_that_hangs_ends_the_connect_at_timeout_startup_naming_the_endpoint(
        gateway: Callable[..., Any], endpoint: str) -> None:  # noqa: F811

    async def scenario() -> None:
        servers = [{"name": "guarded", "type": "remote", "url": proxy.url(), "timeout": {"startup": 4000}}]
        async with gateway(servers) as gw:
            status = await gw.wait_state("guarded", FAILED, timeout=30)
            assert "within 4s" in status.reason and "timeout.startup" in status.reason, status.reason
            assert "OAuth" in status.reason and endpoint in status.reason, status.reason
            assert await _closed(proxy), "the stalled OAuth request's connection stayed open"

    with _guarded_behind(lambda r: Stall.SILENT if r.path.startswith(endpoint) else None) as proxy:
        asyncio.run(scenario())
