"""`skill install` from a git server that trickles (headers, then a byte every 2 s): git's own
low-speed limit ends the clone (~30 s), the one line says the clone failed, and nothing is
installed; no git process of it is left behind. Real git, a real socket server."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import cli


@pytest.fixture
def trickle() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            while not stop.wait(2.0):
                try:
                    conn.sendall(b"1\r\n0\r\n")
                except OSError:
                    return

    def accept() -> None:
        server.settimeout(0.5)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    stop.set()
    server.close()


@pytest.mark.slow
def test_a_trickling_git_server_ends_the_clone_and_installs_nothing(tmp_path: Path, trickle: int) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("AI_CODING_", "XDG_"))},
           "HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
           "XDG_CONFIG_HOME": str(home / ".config")}
    began = time.monotonic()
    done = cli(env, "skill", "install", f"http://127.0.0.1:{trickle}/skills.git", "--yes", timeout=200)
    took = time.monotonic() - began
    print(f"\nclone ended after {took:.1f} s")
    assert done.returncode != 0 and "cannot clone" in done.stderr, done.stderr
    assert not (home / ".local" / "share" / "ai-coding" / "skills").exists() or not any(
        (home / ".local" / "share" / "ai-coding" / "skills").iterdir())
    assert took < 100  # ended by git's 30 s low-speed limit (the old clone waited its full 120 s)
