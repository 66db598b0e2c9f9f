"""A workspace at or above the user's home, the runtime dir, the config or data dir is refused, and
those stay invisible to bash however a command reaches for them: the keys in ~/.ssh and the
service sockets (a command calling the tools service directly would skip the permission gate).

The tool service runs as its own process (`ai-coding serve tools`) with an isolated HOME and a
runtime dir of its own; every call is real gRPC and every command runs in real bwrap.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from services.tools.sandbox import bwrap_argv
from tests.support.tools_harness import ToolServiceClient

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- home-secret-key-material"
SOCKET_PROBE = """python3 - <<'PYEOF'
import socket, sys
for path in sys.argv[1:] or {paths!r}:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        print("CONNECTED", path)
    except OSError as exc:
        print("refused", path, exc.strerror)
PYEOF
echo finished"""


@pytest.fixture
def ssh_key(isolated_home: Path) -> Path:
    key = isolated_home / ".ssh" / "id_ed25519"
    key.parent.mkdir(mode=0o700)
    key.write_text(KEY)
    return key


def bash(client: ToolServiceClient, session: str, command: str) -> str:
    _, result = client.call(session, "bash", json.dumps({"command": command, "timeout_seconds": 30}))
    return result.output


def refusal(client: ToolServiceClient, root: Path) -> str:
    with pytest.raises(grpc.RpcError) as caught:
        client.open("refused", str(root))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    return str(caught.value.details())


def test_a_workspace_containing_home_the_runtime_config_or_data_dir_is_refused_with_the_reason(
        serve_tools: Callable[[str], ToolServiceClient], isolated_home: Path, short_dir: Path,
        ssh_key: Path) -> None:
    client = serve_tools("")
    assert "contains your home directory" in refusal(client, isolated_home.parent)
    assert "too broad" in refusal(client, isolated_home)
    assert "runtime dir" in refusal(client, short_dir)
    assert "user config" in refusal(client, isolated_home / ".config")
    data = isolated_home / ".local" / "share"
    (data / "ai-coding").mkdir(parents=True)
    assert "data dir" in refusal(client, data)
    link = short_dir / "innocent"
    link.symlink_to(isolated_home.parent)  # a symlink is resolved before the check
    assert "contains your home directory" in refusal(client, link)
    project = isolated_home / "projects" / "app"
    project.mkdir(parents=True)
    assert client.open("ok", str(project)).workspace_root == str(project)  # a project below home is fine


def test_an_extra_root_containing_home_is_ignored_and_keys_and_sockets_stay_invisible(
        serve_tools: Callable[[str], ToolServiceClient], isolated_home: Path, short_dir: Path,
        ssh_key: Path, tmp_path: Path) -> None:
    client = serve_tools(f"tools:\n  extra_workspace_roots: [{tmp_path}, {short_dir}]\n")
    project = isolated_home / "projects" / "app"
    project.mkdir(parents=True)
    (project / "keys").symlink_to(ssh_key.parent)
    (project / "run").symlink_to(short_dir / "run")
    opened = client.open("s", str(project))
    assert list(opened.extra_roots) == []
    assert any("ignored" in w and "home directory" in w for w in opened.warnings), opened.warnings
    assert any("ignored" in w and "runtime dir" in w for w in opened.warnings), opened.warnings
    sock = short_dir / "run" / "tools.sock"
    assert KEY in ssh_key.read_text() and sock.exists()  # the host sees both: the control
    out = bash(client, "s", f"cat {ssh_key} keys/id_ed25519 2>&1; ls -A {ssh_key.parent} run/ 2>&1; "
                            f"find / -name 'tools.sock' 2>/dev/null; "
                            + SOCKET_PROBE.format(paths=[str(sock), "run/tools.sock"]))
    assert "finished" in out and KEY not in out, out
    assert "CONNECTED" not in out and "tools.sock\n" not in out.split("refused")[0], out
    _, read = client.call("s", "read", json.dumps({"path": str(ssh_key)}))
    assert not read.ok and read.error.code == "path_outside_workspace"
    _, via_link = client.call("s", "read", json.dumps({"path": "keys/id_ed25519"}))
    assert not via_link.ok and KEY not in via_link.output


def test_a_private_dir_inside_a_root_is_masked_in_real_bwrap(tmp_path: Path) -> None:
    """Defence in depth below the refusal: were a runtime dir inside a root, bash still could not reach
    its socket (real bwrap with the argv the service builds)."""
    root = tmp_path / "ws"
    run = root / "run"
    run.mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(run / "svc.sock"))
    server.listen(1)
    try:
        probe = SOCKET_PROBE.format(paths=[str(run / "svc.sock")])
        assert "CONNECTED" in subprocess.run(["bash", "-c", probe], capture_output=True, text=True,
                                             check=True).stdout  # the control: the host can connect
        argv = bwrap_argv("bwrap", [root], root, False, [str(run)], probe)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                              env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        assert "finished" in done.stdout and "CONNECTED" not in done.stdout, done.stdout + done.stderr
    finally:
        server.close()


def test_ai_coding_run_in_a_folder_containing_home_is_refused_before_any_turn(
        isolated_home: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "clients.cli.entry", "run", "-w", str(tmp_path), "hello"],
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL, check=False)
    try:
        assert done.returncode != 0, done.stdout
        assert "contains your home directory" in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert "Handoff" not in done.stdout  # no turn ran
    finally:
        subprocess.run([sys.executable, "-m", "clients.cli.entry", "down"], capture_output=True, timeout=120,
                       check=False)
