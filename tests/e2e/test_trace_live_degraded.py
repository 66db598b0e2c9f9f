"""Issue 28 item 15: with the collector away, `ai-coding run --json` sees the `trace_export`
degradation inside its one turn (before its turnFinished), and the turn still completes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from clients.cli.runtime import descendants, pid_alive
from services.fake_model import FakeModelServer

pytestmark = pytest.mark.slow


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, check=False)


def test_a_run_json_client_is_told_inside_its_turn_that_spans_cannot_go_out(monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(tempfile.mkdtemp(prefix="aic-tl-", dir="/tmp"))
    os.chmod(root, 0o700)
    (root / "home" / ".config").mkdir(parents=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens here once the socket closes
    # The reply takes 0.5 s, as a real model's does: the exporter's probe of the collector (sent when
    # the session opens) has its answer before the turn ends.
    with FakeModelServer([{"text": "still answered", "delay_ms": 500}]) as model:
        monkeypatch.setenv("HOME", str(root / "home"))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "home" / ".config"))
        monkeypatch.setenv("XDG_DATA_HOME", str(root / "home" / ".local" / "share"))
        monkeypatch.setenv("AI_CODING_RUNTIME_DIR", str(root / "run"))
        for var in ("AI_CODING_TRUST_PROJECT", "AI_CODING_MODEL", "AI_CODING_BASE_URL", "AI_CODING_API_KEY"):
            monkeypatch.delenv(var, raising=False)
        config = root / "config.yaml"
        config.write_text(
            "default_model: fake\nmodels:\n  fake:\n    provider: generic\n    model: fake-model\n"
            f"    base_url: {model.url}\n    api_key: k\n    max_retries: 0\n"
            f"loop:\n  harvest: false\ntracing:\n  otlp:\n    endpoint: http://127.0.0.1:{closed}/v1/traces\n"
            "    timeout_seconds: 1\n")
        monkeypatch.setenv("AI_CODING_CONFIG", str(config))
        (root / "ws").mkdir()
        try:
            done = cli("run", "--json", "-w", str(root / "ws"), "hello")
        finally:
            try:
                sup_pid: int | None = int((root / "run" / "supervisor.pid").read_text())
            except (OSError, ValueError):
                sup_pid = None
            left = descendants(sup_pid) if sup_pid else []
            cli("down")
            for pid in [*left, *([sup_pid] if sup_pid else [])]:
                if pid_alive(pid):
                    os.kill(pid, signal.SIGKILL)
            subprocess.run(["rm", "-rf", str(root)], check=False)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    started = next(n for n, e in enumerate(events) if "turnStarted" in e)
    ended = next(n for n, e in enumerate(events) if "turnFinished" in e)
    degraded = [n for n, e in enumerate(events) if e.get("degraded", {}).get("component") == "trace_export"]
    assert len(degraded) == 1, events
    assert started < degraded[0] < ended
    assert f"127.0.0.1:{closed}" in events[degraded[0]]["degraded"]["reason"]
    assert events[-1]["turnFinished"]["text"] == "still answered"
