"""`ai-coding serve tools` as a real process: health, a call, and SIGTERM stopping running jobs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from services.kernel.channels import check_health
from services.kernel.endpoints import parse_endpoint
from tests.support.tools_harness import ToolServiceClient


def sleeping(marker: str) -> bool:
    wanted = f"sleep\0{marker}\0".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes().startswith(wanted):
                    return True
            except OSError:
                continue
    return False


def test_sigterm_stops_running_jobs_and_removes_the_socket(isolated_home: Path, short_dir: Path,
                                                          workspace: Path) -> None:
    socket_path = short_dir / "run" / "tools.sock"
    exe = Path(sys.executable).parent / "ai-coding"
    proc = subprocess.Popen([str(exe), "serve", "tools"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    client = ToolServiceClient(str(socket_path))
    marker = f"6{uuid.uuid4().int % 10**6}.5"
    try:
        client.connect(alive=lambda: proc.poll() is None)
        endpoint = parse_endpoint("tools", f"unix:{socket_path}")
        assert check_health(endpoint, "ai_coding.v1.ToolRuntime", timeout=10) == "SERVING"
        client.open("s1", str(workspace))
        _, started = client.call("s1", "job_start", json.dumps({"command": f"sleep {marker}"}))
        assert started.ok
        deadline = time.monotonic() + 15
        while not sleeping(marker):
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.05)
    finally:
        client.close()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    assert code == 0
    assert not socket_path.exists()
    deadline = time.monotonic() + 15
    while sleeping(marker):
        assert time.monotonic() < deadline, "the job outlived the service"
        time.sleep(0.05)
