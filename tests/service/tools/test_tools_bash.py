"""bash through the real service in real bwrap: streaming, limits, timeouts, cancellation, bad input."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import grpc
from ai_coding.v1 import common_pb2, tools_pb2

from tests.support.tools_harness import ThreadedToolService


def bash(svc: ThreadedToolService, command: str, **extra: object) -> tuple[list[common_pb2.ToolChunk], common_pb2.ToolResult]:
    return svc.call("s1", "bash", json.dumps({"command": command, **extra}))


def host_pids_with(marker: str) -> list[int]:
    """Host pids running ``marker`` (e.g. "sleep 12.5"): the host /proc sees sandboxed processes too."""
    wanted = marker.replace(" ", "\0").encode() + b"\0"
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.startswith(wanted):
                found.append(int(entry))
    return found


def wait_until(condition: object, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_a_command_runs_in_the_workspace_and_reports_its_exit_code(service: ThreadedToolService,
                                                                   workspace: Path) -> None:
    (workspace / "marker.txt").write_text("here\n")
    _, result = bash(service, "cat marker.txt; pwd; exit 3")
    assert result.ok and "here" in result.output and str(workspace) in result.output
    assert json.loads(result.data_json)["exit_code"] == 3 and "(exit code 3)" in result.output


def test_output_streams_as_chunks_no_faster_than_one_per_150_ms(service: ThreadedToolService) -> None:
    started = time.monotonic()
    chunks, result = bash(service, "for i in $(seq 1 40); do echo tick $i; sleep 0.02; done")
    elapsed = time.monotonic() - started
    assert result.ok and "tick 40" in result.output
    assert 2 <= len(chunks) <= elapsed / 0.15 + 1
    assert all(c.stream == "stdout" and c.call_id == "c1" for c in chunks)
    assert "".join(c.text for c in chunks) in result.output


def test_huge_output_keeps_head_and_tail_and_names_the_limit(service: ThreadedToolService) -> None:
    _, result = bash(service, "seq 1 200000")
    assert result.limit_hit == "output_cap"
    assert result.output.startswith("1\n2\n3\n") and result.output.rstrip().endswith("200000")
    assert "characters cut" in result.output and len(result.output) < 51_000


def test_binary_output_arrives_as_text_without_breaking_the_stream(service: ThreadedToolService) -> None:
    _, result = bash(service, "head -c 30000 /dev/urandom; echo; echo END")
    assert result.ok and result.output.rstrip().endswith("END")
    assert "\x00" not in result.output


def test_a_command_that_never_ends_is_killed_at_its_timeout(service: ThreadedToolService) -> None:
    marker = f"9{uuid.uuid4().int % 10**6}.5"
    started = time.monotonic()
    _, result = bash(service, f"echo started; sleep {marker}", timeout_seconds=1)
    assert time.monotonic() - started < 10
    assert not result.ok and result.error.code == "tool_timeout" and result.limit_hit == "timeout"
    assert "timeout_seconds" in result.error.hint and "started" in result.output
    assert wait_until(lambda: not host_pids_with(f"sleep {marker}"))


def test_the_callers_deadline_caps_the_tool_timeout(service: ThreadedToolService) -> None:
    _, result = service.call("s1", "bash", json.dumps({"command": "sleep 30", "timeout_seconds": 600}),
                             timeout=1)
    assert result.error.code == "tool_timeout"


def test_a_daemon_started_by_a_command_dies_with_the_call(service: ThreadedToolService) -> None:
    marker = f"8{uuid.uuid4().int % 10**6}.5"
    _, result = bash(service, f"(setsid nohup sleep {marker} >/dev/null 2>&1 &); sleep {marker} & echo spawned")
    assert result.ok and "spawned" in result.output
    assert wait_until(lambda: not host_pids_with(f"sleep {marker}"))


def test_in_bwrap_a_daemon_is_gone_the_moment_the_call_returns(service: ThreadedToolService) -> None:
    """No /proc sweep runs after a sandboxed command that ended by itself: its PID namespace has
    ended every process in it (setsid and a double fork included) before bwrap exits."""
    marker = f"6{uuid.uuid4().int % 10**6}.5"
    _, result = bash(service, f"(setsid nohup sleep {marker} >/dev/null 2>&1 &); "
                              f"until pgrep -f 'sleep {marker}' >/dev/null; do sleep 0.01; done; echo spawned")
    assert result.ok and "spawned" in result.output
    assert host_pids_with(f"sleep {marker}") == []  # at once: nothing left to wait for


def test_cancelling_the_rpc_kills_the_process_group(service: ThreadedToolService) -> None:
    marker = f"7{uuid.uuid4().int % 10**6}.5"
    stream = service.stub.CallTool(tools_pb2.CallToolRequest(
        session_id="s1", call_id="c9", tool="bash",
        arguments_json=json.dumps({"command": f"echo ready; sleep {marker}"})), timeout=60)
    first = next(stream)
    assert first.chunk.text.startswith("ready")
    assert wait_until(lambda: bool(host_pids_with(f"sleep {marker}")))
    stream.cancel()
    assert wait_until(lambda: not host_pids_with(f"sleep {marker}"))


def test_invalid_json_arguments_come_back_as_a_tool_error(service: ThreadedToolService) -> None:
    _, result = service.call("s1", "bash", '{"command": "ls"')
    assert not result.ok and result.error.code == "invalid_arguments" and "JSON" in result.error.message


def test_an_unknown_field_is_named(service: ThreadedToolService) -> None:
    _, result = bash(service, "ls", cwd="/")
    assert result.error.code == "invalid_arguments" and "`cwd`" in result.error.message


def test_a_denied_command_is_refused_by_the_service_itself(service: ThreadedToolService, workspace: Path) -> None:
    _, result = bash(service, "echo ok && git push --force origin main")
    assert result.error.code == "denied_command" and "git push" in result.error.message


def test_an_unknown_tool_is_a_tool_error(service: ThreadedToolService) -> None:
    _, result = service.call("s1", "teleport", "{}")
    assert result.error.code == "unknown_tool" and "bash" in result.error.hint


def test_an_unknown_session_is_a_not_found_status_with_a_reason(service: ThreadedToolService) -> None:
    from services.kernel.errors import reason_of

    try:
        service.call("nope", "bash", '{"command": "true"}')
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.NOT_FOUND and reason_of(err) == "unknown_session"
    else:
        raise AssertionError("expected NOT_FOUND")


def test_a_workspace_root_of_slash_is_refused(service: ThreadedToolService) -> None:
    from services.kernel.errors import reason_of

    try:
        service.open("s2", "/")
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and reason_of(err) == "invalid_workspace"
    else:
        raise AssertionError("expected INVALID_ARGUMENT")


def test_a_nonsense_caller_deadline_falls_back_to_the_tools_own_limit(service: ThreadedToolService) -> None:
    for bound in (-5.0, float("nan"), float("inf")):
        _, result = service.call("s1", "bash", json.dumps({"command": "echo fine", "timeout_seconds": 1}),
                                 timeout=bound)
        assert result.ok and "fine" in result.output, bound
