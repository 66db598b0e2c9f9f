"""Issue 2 "Must show": the whole product as a user drives it, real processes over real sockets.

The CLI runs as a subprocess (``python -m clients.cli.entry``, as the console script), the supervisor and the four
services are real processes, and the model is the fake model server (the only stand-in).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.cli.runtime import descendants, pid_alive, wait_until
from services.fake_model import FakeModelServer
from services.kernel.channels import check_health
from services.kernel.endpoints import PROTO_SERVICE, STARTED_SERVICE, parse_endpoint

SERVICES = ["loop", "tools", "memory", "mcp_gateway"]

BASH_TURN = [
    {"name": "run-a-command", "text": "Let me look.",
     "tool_calls": [{"name": "bash", "arguments": {"command": "echo sandbox-says-$((6*7))"}}]},
    {"name": "report", "match": "sandbox-says-42", "text": "The command printed 42."},
]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, check=False)


def write_config(path: Path, base_url: str, api_key: str = "test-key") -> None:
    path.write_text(
        "default_model: fake\n"
        "models:\n"
        "  fake:\n"
        "    provider: generic\n"
        "    model: fake-model\n"
        f"    base_url: {base_url}\n"
        f"    api_key: {api_key}\n"
        "    max_retries: 0\n"
        "loop:\n"
        "  harvest: false\n"  # the scripts answer the turns, not the memory harvest's extra request
    )


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer(BASH_TURN) as server:
        yield server


@pytest.fixture
def env(isolated_home: Path, tmp_path: Path, model: FakeModelServer,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A configured user (the fake model), a workspace, and services stopped at the end whatever happens."""
    config = tmp_path / "config.yaml"
    write_config(config, model.url)
    monkeypatch.setenv("AI_CODING_CONFIG", str(config))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    rdir = Path(os.environ["AI_CODING_RUNTIME_DIR"])
    yield {"workspace": workspace, "rdir": rdir, "config": config}
    sup_pid = _supervisor_pid(rdir)
    left = descendants(sup_pid) if sup_pid else []
    cli("down")
    for pid in [*left, *([sup_pid] if sup_pid else [])]:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


def _supervisor_pid(rdir: Path) -> int | None:
    try:
        return int((rdir / "supervisor.pid").read_text())
    except (OSError, ValueError):
        return None


def _status() -> dict[str, Any]:
    done = cli("status", "--json")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_up_status_run_json_down_leaves_no_process(env: dict[str, Any], model: FakeModelServer) -> None:
    up = cli("up")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "services started" in up.stdout

    # up returns once a turn can start at once: the loop's session runtime is built, and memory, which
    # a turn asks first thing (loop.memory is on), was started for it.
    loop_endpoint = parse_endpoint("loop", f"unix://{env['rdir']}/loop.sock")
    assert check_health(loop_endpoint, STARTED_SERVICE["loop"], timeout=5) == "SERVING"
    status = cli("status", "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert list(report) == ["services"] and set(report["services"]) == set(SERVICES)
    for name, svc in report["services"].items():
        assert set(svc) == {"pid", "endpoint", "health", "restarts", "uptime_s"}
        assert svc["restarts"] == 0
        if name == "mcp_gateway":  # on demand, and no MCP server is configured: nothing started it
            assert svc["health"] == "ON_DEMAND" and svc["pid"] is None and svc["uptime_s"] is None
            continue
        assert svc["health"] == "SERVING" and pid_alive(svc["pid"])
        assert isinstance(svc["uptime_s"], float)
        # Each service answers a grpc.health.v1 Check itself, on the endpoint status printed.
        assert check_health(parse_endpoint(name, svc["endpoint"]), PROTO_SERVICE[name], timeout=5) == "SERVING"

    run = cli("run", "--json", "--auto-approve", "-w", str(env["workspace"]), "what does the sandbox say?")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    events = _events(run.stdout)
    kinds = [next(k for k in e if k not in ("seq", "sessionId", "turn", "ts")) for e in events]
    assert kinds[0] == "turnStarted" and kinds[-1] == "turnFinished"
    assert "toolStarted" in kinds and "toolFinished" in kinds
    seqs = [int(e["seq"]) for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    finished = next(e["toolFinished"]["result"] for e in events if "toolFinished" in e)
    assert finished["tool"] == "bash" and "sandbox-says-42" in finished["output"]
    assert events[-1]["turnFinished"]["status"] == "TURN_STATUS_COMPLETED"
    assert model.errors == [] and len(model.chat_requests) == 2
    assert not [e for e in events if "degraded" in e]  # memory started for the turn in time
    # The session started memory; with no MCP server configured, nothing started the gateway.
    after_run = _status()["services"]
    assert after_run["memory"]["health"] == "SERVING" and pid_alive(after_run["memory"]["pid"])
    assert after_run["mcp_gateway"]["health"] == "ON_DEMAND" and after_run["mcp_gateway"]["pid"] is None

    sup_pid = _supervisor_pid(env["rdir"])
    assert sup_pid is not None
    tree = [sup_pid, *descendants(sup_pid)]
    assert len(tree) >= 4
    down = cli("down")
    assert down.returncode == 0 and "services stopped" in down.stdout
    assert wait_until(lambda: not any(pid_alive(p) for p in tree), 15)
    assert not any((env["rdir"] / f"{n}.sock").exists() for n in SERVICES)
    assert not list(env["rdir"].glob("*.on-demand"))
    after = cli("status", "--json")
    assert after.returncode == 3
    assert {s["health"] for s in json.loads(after.stdout)["services"].values()} == {"UNREACHABLE"}


def test_a_sigkilled_service_is_back_within_seconds_with_one_restart(env: dict[str, Any]) -> None:
    assert cli("up").returncode == 0
    victim = _status()["services"]["tools"]["pid"]
    os.kill(victim, signal.SIGKILL)

    def back() -> bool:
        svc = _status()["services"]["tools"]
        return bool(svc["health"] == "SERVING" and svc["pid"] != victim)

    assert wait_until(back, 20, interval=0.2)
    report = _status()
    assert report["services"]["tools"]["restarts"] == 1
    assert all(report["services"][n]["restarts"] == 0 for n in ("loop", "memory", "mcp_gateway"))
    assert not pid_alive(victim)


def test_a_sigkilled_service_on_demand_is_back_for_the_next_turn_with_one_restart(env: dict[str, Any],
                                                                                   model: FakeModelServer) -> None:
    model.load_script(BASH_TURN * 2)
    first = cli("run", "--json", "--auto-approve", "-w", str(env["workspace"]), "what does the sandbox say?")
    assert first.returncode == 0, first.stderr[-2000:]
    victim = _status()["services"]["memory"]["pid"]
    assert victim and pid_alive(victim)
    os.kill(victim, signal.SIGKILL)
    assert wait_until(lambda: not pid_alive(victim), 10)

    again = cli("run", "--json", "--auto-approve", "-w", str(env["workspace"]), "what does the sandbox say?")

    assert again.returncode == 0, again.stderr[-2000:]
    assert not [e for e in _events(again.stdout) if "degraded" in e], again.stdout[-3000:]
    memory = _status()["services"]["memory"]
    assert memory["health"] == "SERVING" and memory["pid"] != victim and memory["restarts"] == 1


def test_run_starts_the_services_when_none_are_running(env: dict[str, Any]) -> None:
    run = cli("run", "--auto-approve", "-w", str(env["workspace"]), "what does the sandbox say?")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "starting the services" in run.stderr
    assert "The command printed 42." in run.stdout
    health = {name: s["health"] for name, s in _status()["services"].items()}
    assert health == {"loop": "SERVING", "tools": "SERVING", "memory": "SERVING", "mcp_gateway": "ON_DEMAND"}


def test_a_warn_tool_with_no_terminal_and_no_flag_is_refused_naming_the_flag(env: dict[str, Any]) -> None:
    run = cli("run", "--json", "-w", str(env["workspace"]), "what does the sandbox say?")
    assert "refused `bash`" in run.stderr and "--auto-approve" in run.stderr
    events = _events(run.stdout)
    resolved = [e["approvalResolved"] for e in events if "approvalResolved" in e]
    assert resolved and resolved[0]["decision"] == "APPROVAL_DECISION_DENY"
    finished = [e["toolFinished"]["result"] for e in events if "toolFinished" in e]
    assert finished and finished[0].get("ok", False) is False  # proto3 JSON leaves out a false bool
    assert finished[0]["error"]["code"] == "denied_by_user"
    assert "sandbox-says-42" not in finished[0].get("output", "")


def test_a_model_endpoint_that_refuses_the_connection_fails_the_turn_with_one_clear_reason(
    env: dict[str, Any]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    write_config(env["config"], f"http://127.0.0.1:{closed_port}/v1")
    run = cli("run", "--json", "-w", str(env["workspace"]), "hello")
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    finished = _events(run.stdout)[-1]["turnFinished"]
    assert finished["status"] == "TURN_STATUS_FAILED"
    assert f"127.0.0.1:{closed_port}" in finished["reason"]
    assert "Traceback" not in run.stdout + run.stderr


def test_a_model_endpoint_that_refuses_the_key_fails_the_turn_naming_the_key(env: dict[str, Any],
                                                                             model: FakeModelServer) -> None:
    model.load_script([{"name": "bad-key", "fault": "auth_error"}])
    run = cli("run", "--json", "-w", str(env["workspace"]), "hello")
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    finished = _events(run.stdout)[-1]["turnFinished"]
    assert finished["status"] == "TURN_STATUS_FAILED"
    assert "key" in finished["reason"].lower()
    assert "Traceback" not in run.stdout + run.stderr


def _pty_run(*args: str) -> Any:
    import pexpect

    return pexpect.spawn(sys.executable, ["-m", "clients.cli.entry", "run", *args], env=dict(os.environ),
                         encoding="utf-8", timeout=90, dimensions=(40, 160))


def test_on_a_terminal_a_warn_tool_asks_and_y_runs_it(env: dict[str, Any]) -> None:
    assert cli("up").returncode == 0
    child = _pty_run("-w", str(env["workspace"]), "what does the sandbox say?")
    child.expect_exact("allow bash? [y/a/n/s]")
    child.sendline("y")
    child.expect_exact("The command printed 42.")
    child.expect_exact("completed")
    child.expect(pexpect_eof())
    child.close()
    assert child.exitstatus == 0


def test_ctrl_c_interrupts_the_turn_and_exits_with_the_interrupted_code(env: dict[str, Any],
                                                                         model: FakeModelServer) -> None:
    model.load_script([{"name": "slow", "text": "Thinking about it at length", "chunk_chars": 4,
                        "fault": {"kind": "stall", "after_chunks": 4}}])
    assert cli("up").returncode == 0
    child = _pty_run("-w", str(env["workspace"]), "take your time")
    child.expect_exact("Thinking")
    child.sendintr()
    child.expect_exact("interrupting the turn")
    child.expect(pexpect_eof())
    child.close()
    assert child.exitstatus == 5, child.before


def test_ctrl_c_at_an_approval_prompt_stops_the_turn(env: dict[str, Any], model: FakeModelServer) -> None:
    assert cli("up").returncode == 0
    child = _pty_run("-w", str(env["workspace"]), "what does the sandbox say?")
    child.expect_exact("allow bash? [y/a/n/s]")
    child.sendintr()
    child.expect(pexpect_eof())
    child.close()
    assert child.exitstatus == 5, child.before
    assert len(model.chat_requests) == 1  # the command never ran, the model was not asked again


def test_a_turn_that_outlives_timeout_exits_with_the_timeout_code(env: dict[str, Any],
                                                                  model: FakeModelServer) -> None:
    model.load_script([{"name": "slow", "text": "Thinking", "fault": {"kind": "stall", "after_chunks": 1}}])
    run = cli("run", "--json", "--timeout", "3", "-w", str(env["workspace"]), "take your time")
    assert run.returncode == 4, run.stdout[-2000:] + run.stderr[-2000:]
    assert "did not finish within --timeout" in run.stderr


def test_up_names_a_socket_another_process_holds(env: dict[str, Any]) -> None:
    rdir: Path = env["rdir"]
    rdir.mkdir(mode=0o700, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as squatter:
        squatter.bind(str(rdir / "tools.sock"))
        squatter.listen(16)
        up = cli("up")
    assert up.returncode == 3
    lines = [line for line in up.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in up.stdout + up.stderr
    assert f"socket {rdir}/tools.sock is already in use by another process" in lines[0]
    assert "ai-coding down" in lines[0]


def pexpect_eof() -> Any:
    import pexpect

    return pexpect.EOF
