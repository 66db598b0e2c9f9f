"""The idle-shutdown decision and the activity lock it reads (real flocks, in child processes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from clients.cli.idle import idle_expired, set_stay, stays
from services.kernel.activity import ActivityHold, anyone_active, claim_idle


def test_the_services_stop_only_after_the_whole_idle_time_and_never_when_asked_to_stay() -> None:
    assert not idle_expired(now=100.0, last_busy=95.0, idle_seconds=10.0, stay=False)
    assert idle_expired(now=105.0, last_busy=95.0, idle_seconds=10.0, stay=False)
    assert not idle_expired(now=1e9, last_busy=0.0, idle_seconds=10.0, stay=True)
    assert not idle_expired(now=1e9, last_busy=0.0, idle_seconds=0.0, stay=False)


def test_a_hold_in_another_process_counts_until_that_process_dies(tmp_path: Path) -> None:
    assert not anyone_active(tmp_path)
    code = ("import sys, time; from pathlib import Path; from services.kernel.activity import ActivityHold; "
            "ActivityHold(Path(sys.argv[1])).hold(); print('held', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        assert anyone_active(tmp_path)
        assert claim_idle(tmp_path) is None
    finally:
        child.kill()
        child.wait()
    assert not anyone_active(tmp_path)  # the kernel dropped the dead process's hold


def test_a_service_hold_never_waits_while_the_supervisor_claims_idleness(tmp_path: Path) -> None:
    fd = claim_idle(tmp_path)
    assert fd is not None
    hold = ActivityHold(tmp_path)
    try:
        hold.set(True)
        assert not hold.held
    finally:
        import os

        os.close(fd)
    hold.set(True)
    assert hold.held
    hold.set(False)
    assert not hold.held


def test_stay_is_a_marker_in_the_runtime_dir(tmp_path: Path) -> None:
    assert not stays(tmp_path)
    set_stay(tmp_path, True)
    assert stays(tmp_path)
    set_stay(tmp_path, False)
    set_stay(tmp_path, False)
    assert not stays(tmp_path)
