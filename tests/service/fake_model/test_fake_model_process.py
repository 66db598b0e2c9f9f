"""``python -m services.fake_model`` (what ``ai-coding fake-model`` runs) as a real process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.fake_model import FakeModelServer


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "services.fake_model", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.fixture
def script_file(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text("models: [proc-model]\nsteps:\n  - text: from a process\n", encoding="utf-8")
    return path


@pytest.fixture
def process(script_file: Path) -> Iterator[subprocess.Popen[str]]:
    proc = spawn("--script", str(script_file), "--port", "0")
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


def test_the_process_prints_its_url_serves_the_script_and_exits_cleanly_on_sigterm(
        process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    with urllib.request.urlopen(f"{url}/models", timeout=10) as response:
        assert [m["id"] for m in json.load(response)["data"]] == ["proc-model"]
    request = urllib.request.Request(f"{url}/chat/completions", method="POST", data=json.dumps(
        {"model": "proc-model", "messages": [{"role": "user", "content": "hi"}]}).encode())
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.load(response)["choices"][0]["message"]["content"] == "from a process"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=10) == 0


def test_an_invalid_script_is_one_line_on_stderr_and_exit_code_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- text: ok\n- fault: meltdown\n", encoding="utf-8")
    proc = spawn("--script", str(bad))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "bad.yaml: step 2: fault kind must be one of" in lines[0]


def test_a_port_in_use_is_one_clear_line_and_exit_code_2(script_file: Path) -> None:
    with FakeModelServer([]) as busy:
        proc = spawn("--script", str(script_file), "--port", str(busy.port))
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "Traceback" not in err and f"cannot listen on 127.0.0.1:{busy.port}" in err
