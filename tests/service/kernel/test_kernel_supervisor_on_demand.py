"""Services on demand: the real supervisor listening on their sockets, real service processes started by
the first call, stopping when idle and started again (services/kernel/on_demand.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import grpc
import pytest

from clients.cli import control
from clients.cli.runtime import pid_alive, read_state, wait_until
from services.kernel.endpoints import ensure_runtime_dir
from services.kernel.on_demand import marker_path, waiting
from tests.service.kernel.minimal_service import WAIT_METHOD
from tests.service.kernel.test_kernel_supervisor import _spawn, _stop

Supervised = tuple[Path, "subprocess.Popen[str]"]


def call(rdir: Path, name: str, seconds: float = 0.0, timeout: float = 30.0) -> int:
    """One call of the service's own (not a health check) on a fresh channel, as a client that waits for
    the service to be ready; the pid of the process that answered."""
    with grpc.insecure_channel(f"unix:{rdir}/{name}.sock",
                               options=[("grpc.initial_reconnect_backoff_ms", 50)]) as channel:
        wait = channel.unary_unary(WAIT_METHOD, request_serializer=None, response_deserializer=None)
        return int(wait(str(seconds).encode(), timeout=timeout, wait_for_ready=True))


def service_state(rdir: Path, name: str) -> tuple[str, int | None, int]:
    state = read_state(rdir)
    assert state is not None
    svc = state.services[name]
    return svc.state, svc.pid, svc.restarts


def _supervised(short_dir: Path, idle: float, **env: str) -> Generator[Supervised, None, None]:
    rdir = ensure_runtime_dir(short_dir / "run")
    proc = _spawn(rdir, {"AIC_TEST_ON_DEMAND": "memory,mcp_gateway", "AIC_TEST_ON_DEMAND_IDLE": str(idle), **env})
    try:  # also when the generator is closed (a test that drives it itself): never leave a supervisor behind
        setup = control.resolve()
        ready = wait_until(lambda: all(control.status_report(setup)["services"][n]["health"] == "SERVING"
                                       for n in ("loop", "tools")), 30, interval=0.1)
        assert ready, (rdir / "logs" / "supervisor.log").read_text()
        yield rdir, proc
    finally:
        if proc.poll() is None:
            _stop(proc)


@pytest.fixture
def supervised(isolated_home: Path, short_dir: Path) -> Iterator[Supervised]:
    yield from _supervised(short_dir, idle=300)


@pytest.fixture
def quickly_idle(isolated_home: Path, short_dir: Path) -> Iterator[Supervised]:
    yield from _supervised(short_dir, idle=1.0)


def test_a_service_on_demand_waits_for_its_first_call_and_answers_it(supervised: Supervised) -> None:
    rdir, _ = supervised
    assert service_state(rdir, "memory") == ("on_demand", None, 0)
    assert waiting(rdir / "memory.sock") and marker_path(rdir / "memory.sock").exists()
    time.sleep(1.0)  # nothing starts it by itself, and asking its status does not either
    control.status_report(control.resolve())
    assert service_state(rdir, "memory")[1] is None

    answered_by = call(rdir, "memory")

    state, pid, restarts = service_state(rdir, "memory")
    assert (state, pid, restarts) == ("running", answered_by, 0) and pid_alive(answered_by)
    assert wait_until(lambda: not marker_path(rdir / "memory.sock").exists(), 5)
    assert not waiting(rdir / "memory.sock")
    assert call(rdir, "memory") == answered_by  # the service's own socket now
    assert service_state(rdir, "mcp_gateway")[:2] == ("on_demand", None)  # only what was asked for


def test_it_stops_after_its_idle_time_and_the_next_call_starts_it_again(quickly_idle: Supervised) -> None:
    rdir, _ = quickly_idle
    first = call(rdir, "memory")
    assert wait_until(lambda: service_state(rdir, "memory")[:2] == ("on_demand", None), 15, interval=0.05)
    assert not pid_alive(first)
    assert waiting(rdir / "memory.sock")
    log = (rdir / "logs" / "memory.log").read_text()
    assert "no call for 1 s: stopping" in log

    second = call(rdir, "memory")

    assert second != first
    assert service_state(rdir, "memory") == ("running", second, 0)  # an idle stop is not a restart


def test_a_call_in_flight_keeps_it_running_past_its_idle_time(quickly_idle: Supervised) -> None:
    rdir, _ = quickly_idle
    pid = call(rdir, "memory")
    began = time.monotonic()
    assert call(rdir, "memory", seconds=3.0) == pid  # three idle periods long
    assert time.monotonic() - began >= 3.0
    assert service_state(rdir, "memory")[1] == pid


def test_health_checks_do_not_keep_it_running(quickly_idle: Supervised) -> None:
    rdir, _ = quickly_idle
    setup = control.resolve()
    pid = call(rdir, "memory")
    deadline = time.monotonic() + 15
    while service_state(rdir, "memory")[1] == pid and time.monotonic() < deadline:
        control.health_of(setup.endpoints["memory"], "memory", timeout=0.5)
        time.sleep(0.1)
    assert service_state(rdir, "memory")[:2] == ("on_demand", None)


def test_a_killed_service_on_demand_is_started_by_the_next_call_and_counts_a_restart(supervised: Supervised) -> None:
    rdir, _ = supervised
    pid = call(rdir, "mcp_gateway")
    os.kill(pid, signal.SIGKILL)
    # The supervisor listens again at once: a call made during the restart delay waits for it.
    assert wait_until(lambda: waiting(rdir / "mcp_gateway.sock"), 10, interval=0.02)
    again = call(rdir, "mcp_gateway")
    assert again != pid
    assert service_state(rdir, "mcp_gateway") == ("running", again, 1)
    assert read_state(rdir).services["mcp_gateway"].last_exit == -signal.SIGKILL  # type: ignore[union-attr]


def test_stop_ends_the_started_ones_and_leaves_no_socket_or_marker(supervised: Supervised) -> None:
    rdir, proc = supervised
    pid = call(rdir, "memory")
    assert control.stop(control.resolve()) is True
    assert proc.wait(timeout=30) == 0
    assert not pid_alive(pid)
    for name in ("memory", "mcp_gateway"):
        assert not (rdir / f"{name}.sock").exists() and not marker_path(rdir / f"{name}.sock").exists()


def test_a_service_on_demand_asked_for_at_start_starts_after_the_loop_and_tools(
        isolated_home: Path, short_dir: Path) -> None:
    supervised = _supervised(short_dir, idle=300, AIC_TEST_START_NOW="memory")
    rdir, _ = next(supervised)
    try:
        assert wait_until(lambda: service_state(rdir, "memory")[0] == "running", 15, interval=0.05)
        assert wait_until(lambda: not waiting(rdir / "memory.sock"), 15, interval=0.05)
        assert service_state(rdir, "mcp_gateway")[:2] == ("on_demand", None)
        state = read_state(rdir)
        assert state is not None
        assert (state.services["memory"].started_at or 0) >= (state.services["loop"].started_at or 0)
        assert call(rdir, "memory") == service_state(rdir, "memory")[1]
    finally:
        supervised.close()


def test_connections_waiting_while_it_starts_are_all_answered(supervised: Supervised) -> None:
    rdir, _ = supervised
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        pids = list(pool.map(lambda _: call(rdir, "memory"), range(8)))
    assert len(set(pids)) == 1 and service_state(rdir, "memory")[1] == pids[0]


def test_the_loops_call_waits_for_a_slow_start_on_demand_before_its_own_deadline_counts(
        isolated_home: Path, short_dir: Path) -> None:
    """A service that takes 2.5 s to start (a loaded machine): a call with a 1.5 s deadline fails
    unless it first waits for the start, as the loop's adapters do (services/loop/adapters/on_demand.py)."""
    import asyncio

    from services.kernel.endpoints import parse_endpoint
    from services.kernel.on_demand import ON_DEMAND_ENV
    from services.loop.adapters.on_demand import ServiceChannel

    supervised = _supervised(short_dir, idle=300, AIC_TEST_BIND_DELAY="memory=2.5")
    rdir, _ = next(supervised)
    endpoint = parse_endpoint("memory", f"unix://{rdir}/memory.sock")

    async def call_after(wait_for_start: bool) -> bytes:
        service = ServiceChannel(endpoint, "memory", env={ON_DEMAND_ENV: "memory,mcp_gateway"})
        try:
            if wait_for_start:
                await service.started()
            wait = service.channel.unary_unary(WAIT_METHOD)
            return bytes(await wait(b"0", timeout=1.5))
        finally:
            await service.close()

    try:
        answered = asyncio.run(call_after(wait_for_start=True))
        assert int(answered) == service_state(rdir, "memory")[1]
        # Stop it again, so the next call meets the same slow start, without the wait this time.
        os.kill(int(answered), signal.SIGKILL)
        assert wait_until(lambda: service_state(rdir, "memory")[0] == "on_demand", 15, interval=0.05)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            asyncio.run(call_after(wait_for_start=False))
        assert refused.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    finally:
        supervised.close()
