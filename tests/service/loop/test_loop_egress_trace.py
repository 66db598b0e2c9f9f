"""The egress proxy seen from the loop: a sandboxed command's requests are in the turn's trace
(host, port, bytes, verdict, rule) and a refused host reaches the model with its fix. Real loop,
real tools service in `tools.sandbox.network: proxy` with real bwrap, an origin on 127.0.0.1
pinned as web.test."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ai_coding.v1 import loop_pb2

from clients.cli.trace_view import net_text
from services.loop.tracing import html, overview, store
from services.loop.tracing.report import session_reports
from services.loop.tracing.spans import session_tree
from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace
from tests.support.egress_sites import SECRET_PAGE, Origin, served

__all__ = ["fake", "make_stack", "workspace"]


@pytest.fixture
def web() -> Iterator[Origin]:
    yield from served()


def trace_lines(ws: Path) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for path in sorted((ws / ".ai-coding" / "traces").rglob("*.jsonl")):
        lines += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return lines


def test_each_proxied_request_is_in_the_tool_result_and_a_refusal_tells_the_model_what_to_allow(
        make_stack: Callable[..., LoopStack], web: Origin, workspace: Path, isolated_home: Path) -> None:
    command = f"curl -sS http://web.test:{web.port}/hello; echo; curl -sS http://unlisted.test/x"
    tools = {"tools": {"sandbox": {"network": "proxy", "allow_domains": [f"web.test:{web.port}"]}},
             "net": {"pinned_hosts": {"web.test": f"127.0.0.1:{web.port}"}}}
    stack = make_stack([{"match": "fetch", "tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
                        {"match": "allow_domains", "text": "the proxy refused unlisted.test"}], with_tools=tools)
    _, events = stack.turn("fetch both")
    assert status_name(finished(events)) == "completed"
    result = next(e.tool_finished for e in events if e.WhichOneof("event") == "tool_finished").result
    assert SECRET_PAGE.decode() in result.output
    assert "[sandbox network] refused unlisted.test" in result.output
    assert "add `- unlisted.test` under tools.sandbox.allow_domains" in result.output
    finished_lines = [line for line in trace_lines(workspace) if line.get("kind") == "tool_finished"]
    records = [r for line in finished_lines for r in line["result"]["data"].get("egress", [])]
    by_host = {r["host"]: r for r in records}
    assert by_host["web.test"]["verdict"] == "allowed" and by_host["web.test"]["rule"] == f"web.test:{web.port}"
    assert by_host["web.test"]["bytes_down"] > 0 and by_host["web.test"]["port"] == web.port
    assert by_host["unlisted.test"]["verdict"] == "denied" and by_host["unlisted.test"]["port"] == 80
    assert web.paths() == ["/hello"]


def test_each_proxied_request_is_a_client_span_under_its_tool_call_and_counted_in_the_overview(
        make_stack: Callable[..., LoopStack], web: Origin, workspace: Path, isolated_home: Path) -> None:
    command = (f"curl -sS http://web.test:{web.port}/hello; curl -sS --noproxy '' http://169.254.169.254/x; "
               "curl -sS https://unlisted.test/ 2>&1")
    # An allowed IP literal still meets the address policy: the metadata address is refused, not connected.
    tools = {"tools": {"sandbox": {"network": "proxy", "allow_domains": [f"web.test:{web.port}", "169.254.169.254"]}},
             "net": {"pinned_hosts": {"web.test": f"127.0.0.1:{web.port}"}}}
    stack = make_stack([{"match": "fetch", "tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
                        {"text": "done"}], with_tools=tools)
    session_id, events = stack.turn("fetch three")
    assert status_name(finished(events)) == "completed"
    ref = store.find_session(workspace, session_id)
    spans = session_tree(session_id, session_reports(ref))
    tool = next(s for s in spans if s.name == "execute_tool bash")
    requests = {s.name: s for s in spans if s.parent_id == tool.span_id}
    assert set(requests) == {f"GET web.test:{web.port}", "GET 169.254.169.254:80", "CONNECT unlisted.test:443"}
    ok = requests[f"GET web.test:{web.port}"]
    assert ok.kind == "client" and ok.status == "unset" and tool.start <= ok.start <= ok.end <= tool.end
    assert ok.attributes["server.address"] == "web.test" and ok.attributes["server.port"] == web.port
    assert ok.attributes["http.request.method"] == "GET" and ok.attributes["ai_coding.egress.verdict"] == "allowed"
    assert ok.attributes["ai_coding.egress.rule"] == f"web.test:{web.port}"
    assert isinstance(ok.attributes["ai_coding.egress.bytes_down"], int) and ok.attributes["ai_coding.egress.bytes_down"] > 0
    metadata = requests["GET 169.254.169.254:80"]
    assert metadata.status == "error" and metadata.attributes["error.type"] == "egress_refused"
    assert "link-local" in str(metadata.attributes["ai_coding.egress.reason"])
    unlisted = requests["CONNECT unlisted.test:443"]
    assert unlisted.attributes["ai_coding.egress.verdict"] == "denied"
    assert "tools.sandbox.allow_domains" in str(unlisted.attributes["ai_coding.egress.reason"])
    page = html.render(session_id, session_reports(ref))
    assert f"<td>GET web.test:{web.port}</td><td class=\"ok\">allowed</td><td>web.test:{web.port}</td>" in page
    assert "<td>CONNECT unlisted.test:443</td><td class=\"failed\">denied</td>" in page
    shown = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=session_id, command="trace"), timeout=30)
    assert "network of bash" in shown.text and "3 requests, 2 refused (169.254.169.254:80, unlisted.test:443)" in shown.text
    row = overview.overview(store.sessions(workspace), time.time())[0]
    assert (row.egress_requests, row.egress_refused) == (3, 2) and row.egress_bytes > len(SECRET_PAGE)
    assert net_text(row) == "3 (2 refused)"
