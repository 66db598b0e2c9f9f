"""What the supervisor, a service on demand and its clients agree on (services/kernel/on_demand.py)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from clients.cli.supervisor_config import SupervisorConfig, on_demand_services
from services.kernel.on_demand import (
    CallActivity,
    idle_due,
    idle_seconds_from,
    marker_path,
    names_from,
    socket_identity,
    waiting,
)


def test_a_service_is_idle_only_past_its_time_with_nothing_held() -> None:
    assert idle_due(quiet_for=300.0, idle_seconds=300.0, busy=False)
    assert not idle_due(quiet_for=299.9, idle_seconds=300.0, busy=False)
    assert not idle_due(quiet_for=9999.0, idle_seconds=300.0, busy=True)  # the gateway holding a server
    assert not idle_due(quiet_for=9999.0, idle_seconds=0.0, busy=False)  # 0: never


def test_a_call_in_flight_is_never_quiet_and_the_quiet_time_counts_from_the_last_end() -> None:
    now = [100.0]
    activity = CallActivity(clock=lambda: now[0])
    activity.begin()
    activity.begin()
    now[0] = 500.0
    assert activity.quiet_for() == 0.0
    activity.end()
    assert activity.quiet_for() == 0.0  # one is still running
    activity.end()
    now[0] = 530.0
    assert activity.quiet_for() == 30.0
    activity.end()  # an unmatched end never makes the count negative
    assert activity.in_flight == 0


@pytest.mark.parametrize(("raw", "seconds"), [("", 0.0), ("300", 300.0), ("0.5", 0.5), ("-1", 0.0),
                                              ("soon", 0.0), ("nan", 0.0), ("inf", 0.0)])
def test_the_idle_time_a_supervisor_passes_is_read_safely(raw: str, seconds: float) -> None:
    assert idle_seconds_from({"AI_CODING_IDLE_EXIT_SECONDS": raw}) == seconds


def test_the_names_on_demand_are_read_from_the_environment() -> None:
    assert names_from({"AI_CODING_ON_DEMAND": "memory, mcp_gateway,"}) == {"memory", "mcp_gateway"}
    assert names_from({}) == frozenset()


def test_waiting_is_true_only_while_the_marker_names_the_socket_that_is_there(tmp_path: Path) -> None:
    path = tmp_path / "memory.sock"
    assert not waiting(path)
    first = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    first.bind(str(path))
    marker_path(path).write_text(f"{socket_identity(path)}\n")
    assert waiting(path)
    first.close()
    path.unlink()  # the service took the path over: a new socket, the old marker
    second = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    second.bind(str(path))
    try:
        assert not waiting(path)
        marker_path(path).write_text("garbage")
        assert not waiting(path)
    finally:
        second.close()


def test_only_memory_and_the_gateway_on_a_unix_socket_run_on_demand() -> None:
    endpoints = {"loop": "unix:///r/loop.sock", "tools": "unix:///r/tools.sock", "memory": "unix:///r/memory.sock",
                 "mcp_gateway": "tcp://10.0.0.2:7000"}
    config = SupervisorConfig(on_demand=["loop", "memory", "mcp_gateway"])
    assert on_demand_services(config, endpoints) == ["memory"]
    assert on_demand_services(SupervisorConfig(on_demand=[]), endpoints) == []
    elsewhere = SupervisorConfig(services=["loop", "tools"], on_demand=["memory"])
    assert on_demand_services(elsewhere, endpoints) == []
