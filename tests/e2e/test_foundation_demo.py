"""``ai-coding demo`` as a user runs it: real services, the bundled scripted model, nothing left behind."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from clients.cli.runtime import descendants, pid_alive


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, check=False)


def test_the_demo_fixes_the_bug_says_it_was_a_replay_and_leaves_the_users_services_alone(
    isolated_home: Path,
) -> None:
    assert cli("up").returncode == 0
    try:
        before = json.loads(cli("status", "--json").stdout)
        sup_pid = int((Path(os.environ["AI_CODING_RUNTIME_DIR"]) / "supervisor.pid").read_text())
        processes_before = set(descendants(sup_pid))

        demo = cli("demo")
        assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
        out = demo.stdout
        assert "Traceback" not in out + demo.stderr
        assert "Reading · calc.py" in out and "Editing · calc.py" in out and "python3 -m unittest" in out
        assert "● completed" in out
        assert "scripted replay" in out and "api_key: ${OPENAI_API_KEY}" in out
        workspace = re.search(r"demo workspace: (\S+)", out)
        assert workspace and not Path(workspace.group(1)).exists()  # its temp dir is gone
        # Whatever the demo started is stopped; the user's own services were never touched.
        assert set(descendants(sup_pid)) == processes_before
        after = json.loads(cli("status", "--json").stdout)
        assert {n: (s["pid"], s["health"], s["restarts"]) for n, s in after["services"].items()} == {
            n: (s["pid"], s["health"], 0) for n, s in before["services"].items()
        }
        assert {s["health"] for s in before["services"].values()} == {"SERVING", "ON_DEMAND"}
        assert not [p for p in os.listdir("/proc") if p.isdigit() and _runs_in(p, workspace.group(1))]
    finally:
        cli("down")
    assert not pid_alive(sup_pid)


def _runs_in(pid: str, directory: str) -> bool:
    try:
        return directory in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace") or os.readlink(
            f"/proc/{pid}/cwd").startswith(directory)
    except OSError:
        return False
