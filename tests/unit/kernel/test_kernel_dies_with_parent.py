"""A host process started through dies_with_parent ends when the process that started it is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from services.kernel.host_process import dies_with_parent

# A parent that starts `sleep` through the launcher, prints the sleep's pid, then waits to be killed.
PARENT = """import subprocess, sys, time
from services.kernel.host_process import dies_with_parent
child = subprocess.Popen(dies_with_parent(["sleep", "300"]), start_new_session=True)
print(child.pid, flush=True)
time.sleep(300)
"""
ROOT = Path(__file__).resolve().parents[3]


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_command_dies_when_its_parent_is_sigkilled() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    child = 0
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 10
        argv = b""
        while not argv.startswith(b"sleep\0") and time.monotonic() < deadline:
            time.sleep(0.02)  # until the launcher has become `sleep` (same pid)
            argv = Path(f"/proc/{child}/cmdline").read_bytes()
        assert argv.split(b"\0")[:2] == [b"sleep", b"300"]
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 5
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _running(child), "the command outlived its killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        if child and _running(child):
            os.kill(child, signal.SIGKILL)


def test_the_command_keeps_its_output_and_exit_status() -> None:
    done = subprocess.run(dies_with_parent(["sh", "-c", "echo out; echo err >&2; exit 3"]),
                          capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def test_a_command_that_cannot_start_says_why_in_one_line() -> None:
    done = subprocess.run(dies_with_parent(["/nonexistent/server", "--flag"]), capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 127
    assert done.stderr == "cannot start /nonexistent/server: No such file or directory\n"
