"""``ai-coding fake-model --script FILE --port N`` through the real CLI."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_cli_serves_the_script_on_the_given_port_until_sigterm(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("- name: hello\n  text: hi there\n")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "clients.cli.entry", "fake-model", "--script", str(script),
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url == f"http://127.0.0.1:{port}/v1"
        body = json.dumps({"model": "fake-model", "messages": [{"role": "user", "content": "hello"}]}).encode()
        request = urllib.request.Request(f"{url}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as resp:
            reply = json.load(resp)
        assert reply["choices"][0]["message"]["content"] == "hi there"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0


def test_a_missing_script_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "clients.cli.entry", "fake-model", "--script",
                           str(tmp_path / "nope.yaml"), "--port", "0"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and str(tmp_path / "nope.yaml") in done.stderr
