"""The supervisor over real service processes (kernel bootstrap, real sockets, real health checks)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from clients.cli import control
from clients.cli.runtime import PID_FILE, STATE_FILE, descendants, pid_alive, read_state, wait_until
from clients.cli.supervisor import DEFER_AT_MOST_SECONDS
from services.kernel.endpoints import ensure_runtime_dir

HERE = Path(__file__).parent
Supervised = tuple[control.Setup, "subprocess.Popen[str]"]
SERVICES = ["loop", "tools", "memory", "mcp_gateway"]


def _spawn(rdir: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE / "run_supervisor.py"), str(rdir)],
        env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )


def _stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the supervisor, then SIGKILL whatever was below it and is still there."""
    everything = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    for pid in everything:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


def _all_serving(setup: control.Setup) -> bool:
    report = control.status_report(setup)
    return all(s["health"] == "SERVING" for s in report["services"].values())


@pytest.fixture
def supervised(isolated_home: Path, short_dir: Path) -> Iterator[Supervised]:
    rdir = ensure_runtime_dir(short_dir / "run")
    proc = _spawn(rdir, {"AIC_TEST_CHILDREN": "1", "AIC_TEST_SHUTDOWN_MARKER": str(short_dir / "drained")})
    setup = control.resolve()
    assert wait_until(lambda: _all_serving(setup), 30, interval=0.1), (rdir / "logs" / "supervisor.log").read_text()
    yield setup, proc
    if proc.poll() is None:
        _stop(proc)


def test_every_service_is_serving_and_status_shows_pid_endpoint_and_no_restarts(supervised: Supervised) -> None:
    setup, proc = supervised
    report = control.status_report(setup)
    assert report["supervisor"] == {"pid": proc.pid, "running": True, "runtime_dir": str(setup.rdir)}
    for name in SERVICES:
        svc = report["services"][name]
        assert svc["health"] == "SERVING"
        assert svc["endpoint"] == f"unix://{setup.rdir}/{name}.sock"
        assert svc["restarts"] == 0
        assert pid_alive(svc["pid"]) and svc["uptime_s"] >= 0
    assert json.loads(json.dumps(report)) == report


def test_a_killed_service_comes_back_and_its_restart_is_counted(supervised: Supervised) -> None:
    setup, _ = supervised
    old_pid = control.status_report(setup)["services"]["tools"]["pid"]
    os.kill(old_pid, signal.SIGKILL)

    def back() -> bool:
        svc = control.status_report(setup)["services"]["tools"]
        return svc["health"] == "SERVING" and svc["pid"] not in (None, old_pid)

    assert wait_until(back, 20, interval=0.1)
    report = control.status_report(setup)
    assert report["services"]["tools"]["restarts"] == 1
    assert [report["services"][n]["restarts"] for n in ("loop", "memory", "mcp_gateway")] == [0, 0, 0]


def test_a_second_supervisor_on_the_same_runtime_dir_is_refused_with_a_clear_message(supervised: Supervised) -> None:
    setup, proc = supervised
    second = _spawn(setup.rdir)
    _, err = second.communicate(timeout=30)
    assert second.returncode == 2
    assert f"another supervisor (pid {proc.pid}) already runs on {setup.rdir}" in err
    assert "Traceback" not in err
    via_cli = subprocess.run([sys.executable, "-m", "clients.cli.entry", "up", "--foreground"], capture_output=True,
                             text=True, timeout=60, check=False)
    assert via_cli.returncode == 2
    assert via_cli.stderr.strip() == (f"ai-coding up: another supervisor (pid {proc.pid}) already runs on "
                                      f"{setup.rdir}; use `ai-coding status` to see it or `ai-coding down` to stop it")
    assert _all_serving(setup)


def test_stop_drains_each_service_and_leaves_no_process_or_file_behind(supervised: Supervised, short_dir: Path) -> None:
    setup, proc = supervised
    everything = descendants(proc.pid)
    assert len(everything) >= 4 * 3  # each service plus its two children
    assert control.stop(setup) is True
    assert proc.wait(timeout=30) == 0
    assert wait_until(lambda: not any(pid_alive(p) for p in everything), 10)
    for name in SERVICES:
        assert (short_dir / f"drained.{name}").read_text() == "drained"
        assert not (setup.rdir / f"{name}.sock").exists()
    assert not (setup.rdir / STATE_FILE).exists() and not (setup.rdir / PID_FILE).exists()
    assert control.stop(setup) is False


def test_a_service_that_keeps_crashing_is_restarted_with_growing_delays(isolated_home: Path, short_dir: Path) -> None:
    rdir = ensure_runtime_dir(short_dir / "run")
    proc = _spawn(rdir, {"AIC_TEST_CRASH": "memory"})
    try:
        gaps: list[float] = []
        seen_restarts = -1

        def record() -> bool:
            nonlocal seen_restarts
            state = read_state(rdir)
            if state is None or "memory" not in state.services:
                return False
            svc = state.services["memory"]
            if svc.state == "backoff" and svc.restarts != seen_restarts and svc.next_start_at:
                seen_restarts = svc.restarts
                gaps.append(svc.next_start_at)
            return len(gaps) >= 3

        assert wait_until(record, 30, interval=0.02)
        setup = control.resolve()
        assert control.status_report(setup)["services"]["loop"]["health"] == "SERVING"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    state_restarts = seen_restarts
    assert state_restarts >= 2
    # The test supervisor starts at 0.5 s and doubles: 0.5, 1, 2 -> gaps between scheduled starts grow.
    assert gaps[2] - gaps[1] > gaps[1] - gaps[0] > 0


def test_stale_sockets_and_pid_files_are_cleaned_before_starting(isolated_home: Path, short_dir: Path) -> None:
    rdir = ensure_runtime_dir(short_dir / "run")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(rdir / "loop.sock"))
    stale.close()  # the file stays, nobody listens: what a crashed service leaves
    (rdir / PID_FILE).write_text("999999\n")
    proc = _spawn(rdir)
    try:
        setup = control.resolve()
        assert wait_until(lambda: _all_serving(setup), 30, interval=0.1)
        assert (rdir / PID_FILE).read_text().strip() == str(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


@pytest.mark.parametrize("on_demand", ["", "memory"])
def test_a_socket_in_use_by_another_process_is_named_in_the_service_log(
        isolated_home: Path, short_dir: Path, on_demand: str) -> None:
    rdir = ensure_runtime_dir(short_dir / "run")
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    squatter.bind(str(rdir / "memory.sock"))
    squatter.listen(1)
    proc = _spawn(rdir, {"AIC_TEST_ON_DEMAND": on_demand})  # on demand: never taken from its owner
    try:
        log = rdir / "logs" / "memory.log"
        assert wait_until(lambda: log.exists() and "already in use" in log.read_text(), 30, interval=0.1)
        text = log.read_text()
        assert f"socket {rdir}/memory.sock is already in use by another process" in text
        assert "Traceback" not in text
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        squatter.close()



def test_logs_prints_the_tail_and_follow_shows_new_lines(supervised: Supervised) -> None:
    setup, _ = supervised
    cmd = [sys.executable, "-m", "clients.cli.entry", "logs", "memory"]
    done = subprocess.run([*cmd, "-n", "3"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "memory serving on" in done.stdout
    assert len(done.stdout.splitlines()) <= 3
    follower = subprocess.Popen([*cmd, "-f", "-n", "0"], stdout=subprocess.PIPE, text=True)
    marker = "a line written while following"
    stop = threading.Event()

    def append() -> None:  # keep appending: the follower starts reading at the end it first sees
        while not stop.wait(0.1):
            with open(setup.rdir / "logs" / "memory.log", "a") as fh:
                fh.write(f"{marker}\n")

    writer = threading.Thread(target=append, daemon=True)
    writer.start()
    try:
        assert follower.stdout is not None
        first = follower.stdout.readline()
        assert first.strip() == marker
    finally:
        stop.set()
        follower.terminate()
        follower.wait(timeout=10)


def test_down_after_the_supervisor_was_killed_outright_cleans_up_what_its_services_left(
    supervised: Supervised,
) -> None:
    setup, proc = supervised
    services = {name: svc.pid for name, svc in (read_state(setup.rdir) or pytest.fail("no state")).services.items()}
    same_group = [p for p in descendants(proc.pid) if p not in services.values() and os.getpgid(p) in services.values()]
    assert len(same_group) == 4  # each service's `sleep 300`
    escaped = [p for p in descendants(proc.pid) if p not in services.values() and p not in same_group]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    # The services notice their parent died (PDEATHSIG) and stop by themselves.
    assert wait_until(lambda: not any(pid_alive(p) for p in services.values() if p), 20)
    assert control.stop(setup) is False
    assert wait_until(lambda: not any(pid_alive(p) for p in same_group), 10)
    assert not (setup.rdir / STATE_FILE).exists() and not (setup.rdir / PID_FILE).exists()
    # A process that left its service's session has no link left once the supervisor is gone.
    for pid in escaped:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


def _started_at(rdir: Path) -> dict[str, float]:
    state = read_state(rdir)
    assert state is not None
    return {name: svc.started_at or 0.0 for name, svc in state.services.items()}


def _supervise_until_serving(rdir: Path, env: dict[str, str]) -> dict[str, float]:
    """Run a supervisor with ``env`` until every service serves; the start times it recorded."""
    proc = _spawn(rdir, env)
    try:
        setup = control.resolve()
        assert wait_until(lambda: _all_serving(setup), 30, interval=0.1), (rdir / "logs" / "supervisor.log").read_text()
        return _started_at(rdir)
    finally:
        _stop(proc)


def test_memory_and_the_gateway_start_once_the_loop_and_tools_listen(isolated_home: Path, short_dir: Path) -> None:
    rdir = ensure_runtime_dir(short_dir / "run")
    bound: list[float] = []

    def loop_bound() -> bool:  # when the loop's socket appeared (it binds 0.3 s after its start)
        with contextlib.suppress(FileNotFoundError):
            bound.append(os.stat(rdir / "loop.sock").st_mtime)
        return bool(bound)

    watcher = threading.Thread(target=wait_until, args=(loop_bound, 30, 0.005), daemon=True)
    watcher.start()
    started = _supervise_until_serving(rdir, {"AIC_TEST_BIND_DELAY": "loop=0.3"})
    watcher.join(timeout=30)
    assert bound and started["loop"] + 0.25 <= bound[0], (bound, started)
    # The loop and tools at once; the others not before the loop's socket existed.
    assert abs(started["loop"] - started["tools"]) < 0.3, started
    assert all(started[name] >= bound[0] - 0.01 for name in ("memory", "mcp_gateway")), (bound, started)


@pytest.mark.slow
def test_a_loop_slow_to_listen_holds_the_others_back_a_few_seconds_at_most(isolated_home: Path, short_dir: Path) -> None:
    rdir = ensure_runtime_dir(short_dir / "run")
    started = _supervise_until_serving(rdir, {"AIC_TEST_BIND_DELAY": "loop=8"})
    # The wait counts from just before the first start (the loop's); the tools start a moment later,
    # up to a few tenths of a second on a loaded machine.
    first = min(started["loop"], started["tools"])
    wait = DEFER_AT_MOST_SECONDS
    assert all(wait - 0.1 <= started[name] - first < 8 for name in ("memory", "mcp_gateway")), started


def test_a_loop_that_exits_at_start_does_not_hold_the_others_back(isolated_home: Path, short_dir: Path) -> None:
    rdir = ensure_runtime_dir(short_dir / "run")
    proc = _spawn(rdir, {"AIC_TEST_EXIT_BEFORE_BIND": "loop"})
    try:
        # The loop exits before it binds, every time: memory and the gateway start without waiting
        # out DEFER_AT_MOST_SECONDS (counted from the supervisor's own start).
        assert wait_until(lambda: all((rdir / f"{n}.sock").exists() for n in ("memory", "mcp_gateway")), 30, 0.05)
        state = read_state(rdir)
        assert state is not None
        late = [state.services[n].started_at or 0.0 for n in ("memory", "mcp_gateway")]
        assert all(0 < at - state.started_at < DEFER_AT_MOST_SECONDS - 1.0 for at in late), (late, state.started_at)
    finally:
        _stop(proc)
