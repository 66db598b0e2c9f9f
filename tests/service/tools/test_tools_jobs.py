"""Background jobs: start, read output, list, stop, and everything stopped at CloseSession."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ai_coding.v1 import common_pb2, tools_pb2

from tests.support.tools_harness import ThreadedToolService


def call(svc: ThreadedToolService, tool: str, **args: object) -> common_pb2.ToolResult:
    return svc.call("s1", tool, json.dumps(args))[1]


def poll_output(svc: ThreadedToolService, job_id: str, want: str, timeout: float = 15.0) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen += call(svc, "job_output", job_id=job_id).output
        if want in seen:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"{want!r} never appeared in {seen!r}")


def test_a_job_runs_in_the_background_and_its_output_is_read_incrementally(service: ThreadedToolService) -> None:
    started = call(service, "job_start", command="for i in 1 2 3; do echo line$i; sleep 0.2; done; echo done")
    job_id = json.loads(started.data_json)["job_id"]
    assert started.ok and job_id == "job-1"
    seen = poll_output(service, job_id, "done")
    assert seen.count("line1") == 1  # a second read returns only new text
    listing = json.loads(call(service, "job_list").data_json)["jobs"]
    assert listing[0]["status"] == "exited" and listing[0]["exit_code"] == 0


def test_job_stop_kills_a_running_job(service: ThreadedToolService) -> None:
    job_id = json.loads(call(service, "job_start", command="echo up; sleep 600").data_json)["job_id"]
    poll_output(service, job_id, "up")
    stopped = call(service, "job_stop", job_id=job_id)
    assert stopped.ok and json.loads(stopped.data_json)["status"] == "stopped"


def test_job_buffers_are_bounded_and_say_what_was_dropped(service: ThreadedToolService) -> None:
    job_id = json.loads(call(service, "job_start", command="seq 1 100000; echo finished").data_json)["job_id"]
    deadline = time.monotonic() + 15
    while json.loads(call(service, "job_list").data_json)["jobs"][0]["status"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    out = call(service, "job_output", job_id=job_id)
    assert "finished" in out.output and "older characters were dropped" in out.output
    assert len(out.output) < 25_000


def test_closing_the_session_stops_its_jobs(service: ThreadedToolService, workspace: Path) -> None:
    for _ in range(2):
        call(service, "job_start", command="sleep 600")
    closed = service.stub.CloseSession(tools_pb2.CloseSessionRequest(session_id="s1"), timeout=30)
    assert closed.jobs_stopped == 2


def test_an_unknown_job_id_lists_the_known_ones(service: ThreadedToolService) -> None:
    call(service, "job_start", command="true")
    result = call(service, "job_output", job_id="job-99")
    assert result.error.code == "not_found" and "job-1" in result.error.message


def test_a_denied_command_cannot_be_started_as_a_job(service: ThreadedToolService) -> None:
    assert call(service, "job_start", command="sudo sleep 1").error.code == "denied_command"


def test_a_session_runs_at_most_eight_jobs_at_once(service: ThreadedToolService) -> None:
    for _ in range(8):
        assert call(service, "job_start", command="sleep 600").ok
    refused = call(service, "job_start", command="sleep 600")
    assert refused.error.code == "job_limit" and "job_stop" in refused.error.hint
    assert call(service, "job_stop", job_id="job-1").ok
    assert call(service, "job_start", command="true").ok
