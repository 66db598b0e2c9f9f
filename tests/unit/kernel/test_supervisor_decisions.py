"""Pure decisions of the supervisor and the run command."""

from __future__ import annotations

from pathlib import Path

import pytest
from ai_coding.v1 import loop_pb2

from clients.cli import exit_codes
from clients.cli.runtime import (
    ServiceState,
    SupervisorState,
    read_state,
    state_from_json,
    state_to_json,
    write_atomic,
)
from clients.cli.supervisor import next_streak, restart_delay


@pytest.mark.parametrize(("streak", "delay"), [(1, 1.0), (2, 2.0), (3, 4.0), (5, 16.0), (6, 30.0), (40, 30.0)])
def test_the_restart_delay_starts_at_one_second_doubles_and_is_capped_at_thirty(streak: int, delay: float) -> None:
    assert restart_delay(streak) == delay


def test_a_crash_after_a_long_healthy_run_starts_the_backoff_series_again() -> None:
    assert next_streak(4, uptime=61.0, stable_seconds=60.0) == 1
    assert next_streak(4, uptime=2.0, stable_seconds=60.0) == 5
    assert next_streak(0, uptime=0.1) == 1


def test_each_turn_status_maps_to_its_documented_exit_code() -> None:
    got = {name: exit_codes.for_turn_status(name) for name in loop_pb2.TurnStatus.keys()}  # noqa: SIM118 (enum wrapper, not a dict)
    assert got == {
        "TURN_STATUS_UNSPECIFIED": exit_codes.FAILED,
        "TURN_STATUS_COMPLETED": 0,
        "TURN_STATUS_MAX_ITERATIONS": 6,
        "TURN_STATUS_BUDGET": 6,
        "TURN_STATUS_TIMEOUT": 4,
        "TURN_STATUS_INTERRUPTED": 5,
        "TURN_STATUS_APPROVAL_STOP": 5,
        "TURN_STATUS_FAILED": 1,
        "TURN_STATUS_ACCEPTANCE_FAILED": 7,
        "TURN_STATUS_PLAN_INCOMPLETE": 7,
    }
    codes = {exit_codes.FAILED, exit_codes.UNAVAILABLE, exit_codes.TIMEOUT, exit_codes.INTERRUPTED}
    assert len(codes) == 4 and exit_codes.OK not in codes


def test_the_state_file_round_trips_and_a_torn_one_reads_as_none(tmp_path: Path) -> None:
    state = SupervisorState(pid=12, started_at=1.5, runtime_dir=str(tmp_path),
                            services={"loop": ServiceState(pid=13, endpoint="unix:///x.sock", restarts=2)})
    assert state_from_json(state_to_json(state)) == state
    write_atomic(tmp_path / "supervisor.json", state_to_json(state))
    assert read_state(tmp_path) == state
    assert [p.name for p in tmp_path.iterdir()] == ["supervisor.json"]  # no temp file left
    (tmp_path / "supervisor.json").write_text('{"pid": 12, "services": {')
    assert read_state(tmp_path) is None
