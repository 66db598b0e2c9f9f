"""A background job's connection to a host the sandbox's allow-list does not name: nobody can be asked,
so it is refused, and the refusal is traced (a span under the job_output call that told it) and said to
the model with the way the user allows it; ``/network`` lists it, ``/network allow`` grants it for the
session, the next job gets through, and the grant survives a restart of the tools service. Real loop,
real tools service in ``tools.sandbox.network: proxy`` with real bwrap; the origin listens on
127.0.0.1, pinned as asked.test."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ai_coding.v1 import loop_pb2

from services.kernel.config import Config
from services.loop.tracing import store
from services.loop.tracing.report import session_reports
from services.loop.tracing.spans import session_tree
from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace
from tests.support.egress_sites import SECRET_PAGE, Origin, served

__all__ = ["fake", "make_stack", "workspace"]


@pytest.fixture
def web() -> Iterator[Origin]:
    yield from served("/first", "/second", "/third")


def job_script(web: Origin, path: str, job: str) -> list[dict[str, Any]]:
    """Start a job that fetches ``path``, wait for it, read its output."""
    command = f"curl -sS --max-time 20 http://asked.test:{web.port}{path}"
    return [{"tool_calls": [{"name": "job_start", "arguments": {"command": command}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 3"}}]},
            {"tool_calls": [{"name": "job_output", "arguments": {"job_id": job}}]},
            {"text": "read it"}]


def job_output(events: list[loop_pb2.TurnEvent]) -> str:
    results = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"]
    return str(results[-1].output)


def command(stack: LoopStack, session_id: str, name: str, args: str = "") -> tuple[str, dict[str, Any]]:
    reply = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=session_id, command=name, args=args), timeout=30)
    return reply.text, json.loads(reply.data_json or "{}")


def test_a_background_jobs_refusal_is_traced_the_user_grants_it_and_the_grant_survives_a_tools_restart(
        make_stack: Callable[..., LoopStack], web: Origin, workspace: Path, isolated_home: Path) -> None:
    tools = {"tools": {"sandbox": {"network": "proxy", "allow_domains": []}},
             "net": {"pinned_hosts": {"asked.test": f"127.0.0.1:{web.port}"}}}
    stack = make_stack(job_script(web, "/first", "job-1"), with_tools=tools)
    session_id = stack.open(auto_approve=True, interactive=True).session_id
    events = stack.start(session_id, "fetch in the background").drain()
    assert status_name(finished(events)) == "completed"
    told = job_output(events)
    assert SECRET_PAGE.decode() not in told and web.paths() == []
    assert f"refused asked.test: asked.test:{web.port} is not in tools.sandbox.allow_domains" in told
    assert "(a background job cannot ask you)" in told
    assert f"/network allow asked.test:{web.port}" in told  # what the user can do, for the model to say

    spans = session_tree(session_id, session_reports(store.find_session(workspace, session_id)))
    call = next(s for s in spans if s.name == "execute_tool job_output")
    [refused] = [s for s in spans if s.parent_id == call.span_id]
    assert refused.name == f"GET asked.test:{web.port}"
    assert refused.attributes["ai_coding.egress.verdict"] == "denied"

    text, data = command(stack, session_id, "jobs")
    assert data["jobs"][0]["egress_refused"] == [f"asked.test:{web.port}"]
    assert f"network refused: asked.test:{web.port}" in text
    text, data = command(stack, session_id, "network")
    assert data["refused"] == [f"asked.test:{web.port}"] and data["granted"] == []
    assert "a background job" in text and f"/network allow asked.test:{web.port}" in text
    text, data = command(stack, session_id, "network", f"allow asked.test:{web.port}")
    assert data["granted"] == [f"asked.test:{web.port}"], text
    assert data["refused"] == []

    stack.fake.load_script(job_script(web, "/second", "job-2"))
    events = stack.start(session_id, "again").drain()
    assert SECRET_PAGE.decode() in job_output(events), job_output(events)

    # The tools service restarts: the session's grant is still there, from its state dir.
    from services.tools.main import build as build_tools

    address = f"unix:{stack.dir}/tools.sock"
    stack.services.stop_server(stack.tools)
    stack.tools = stack.services.serve(address, build_tools(Config(data=tools)))
    stack.fake.load_script(job_script(web, "/third", "job-1"))  # a new service numbers jobs afresh
    events = stack.start(session_id, "after the restart").drain()
    assert SECRET_PAGE.decode() in job_output(events), job_output(events)
    assert web.paths() == ["/second", "/third"]
    assert command(stack, session_id, "network")[1]["granted"] == [f"asked.test:{web.port}"]


def test_a_grant_never_opens_a_denied_host_a_wildcard_or_an_ip_literal(
        make_stack: Callable[..., LoopStack], web: Origin, isolated_home: Path) -> None:
    tools = {"tools": {"sandbox": {"network": "proxy", "allow_domains": [], "deny_domains": ["denied.test"]}},
             "net": {"pinned_hosts": {"denied.test": f"127.0.0.1:{web.port}"}}}
    stack = make_stack([{"text": "idle"}], with_tools=tools)
    session_id = stack.open(auto_approve=True).session_id
    for target, why in (("denied.test", "a grant never overrides a deny rule"), ("*.example.com", "wildcards"),
                        ("127.0.0.1:8080", "IP address"), ("a b", "usage")):
        text, data = command(stack, session_id, "network", f"allow {target}")
        assert "error" in data and why in text, (target, text)
    assert command(stack, session_id, "network")[1]["granted"] == []
    text, data = command(stack, session_id, "network", "revoke nothing.test")
    assert data["error"] == "refused" and "was not granted" in text
