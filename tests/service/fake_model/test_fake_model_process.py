"""``python -m services.fake_model`` (what ``ai-coding fake-model`` runs) as a real process."""

from __future__ import annotations

import json
import signal
import socket
import struct
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

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


def reset_connection_after_one_reply(url: str) -> None:
    """A keep-alive request, then a hard close (RST), as HTTP client pools do at exit."""
    parts = urlsplit(url)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=10) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        reply = b""
        while b"\r\n\r\n" not in reply or len(reply.partition(b"\r\n\r\n")[2]) < _content_length(reply):
            data = sock.recv(65536)
            assert data, "the server closed the connection early"
            reply += data
        assert reply.startswith(b"HTTP/1.1 200")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _content_length(reply: bytes) -> int:
    head = reply.partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    return int(head.split("content-length:")[1].split("\r\n")[0])


def test_clients_hanging_up_mid_stream_or_with_a_reset_print_no_traceback(tmp_path: Path) -> None:
    script = tmp_path / "stall.yaml"
    script.write_text("- text: first\n- text: waiting forever\n  fault: {kind: stall, after_chunks: 1}\n"
                      "- text: next\n", encoding="utf-8")
    proc = spawn("--script", str(script))
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        reset_connection_after_one_reply(url)
        request = urllib.request.Request(f"{url}/chat/completions", method="POST", data=json.dumps(
            {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode())
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.readline().startswith(b"data: ")
        # The stalled handler notices the hang-up and the next step is still served.
        request = urllib.request.Request(f"{url}/chat/completions", method="POST", data=json.dumps(
            {"model": "m", "messages": [{"role": "user", "content": "again"}]}).encode())
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.load(response)["choices"][0]["message"]["content"] == "next"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 0
    assert "Traceback" not in err
