"""``ai-coding trace`` end to end: a real loop + tools service (bwrap) run a session with a queued
turn, a failing tool, a denied approval and a memory service that is down; the CLI (a subprocess,
no service needed) then reports and exports what the loop traced.

The HTML export is opened in headless Chromium (a screenshot, and the rendered DOM must name the
tools); without a browser that can start, that test is skipped with the reason.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ai_coding.v1 import loop_pb2
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from services.fake_model import FakeModelServer
from tests.service.loop.harness import Conversation, LoopStack, fake, make_stack, workspace  # noqa: F401

pytestmark = pytest.mark.slow

USAGE = [{"prompt_tokens": 1200, "completion_tokens": 30, "cached_tokens": 0},
         {"prompt_tokens": 1500, "completion_tokens": 20, "cached_tokens": 1100},
         {"prompt_tokens": 1700, "completion_tokens": 10, "cached_tokens": 1400}]
SCRIPT = [
    {"name": "look", "usage": USAGE[0], "tool_calls": [
        {"name": "read", "arguments": {"path": "missing.txt"}},
        {"name": "bash", "arguments": {"command": "echo not-allowed"}}]},
    {"name": "answer-1", "usage": USAGE[1], "text": "The file is missing and bash was refused.",
     "chunk_chars": 3, "chunk_delay_ms": 15},
    {"name": "answer-2", "usage": USAGE[2], "text": "Second turn done."},
]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=False)


@pytest.fixture
def traced(make_stack: Callable[..., LoopStack], fake: FakeModelServer, workspace: Path  # noqa: F811
           ) -> dict[str, Any]:
    stack = make_stack(SCRIPT, with_tools=True, memory="down")
    sid = stack.open(auto_approve=False, interactive=True).session_id

    queued: list[bool] = []  # sent once: on a busy machine several deltas arrive before input_queued

    def on_event(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        kind = event.WhichOneof("event")
        if kind == "approval_requested":
            conv.send(loop_pb2.ClientMessage(approval=loop_pb2.ApprovalReply(
                request_id=event.approval_requested.request_id, decision=loop_pb2.APPROVAL_DECISION_DENY)))
        elif kind == "text_delta" and not queued:
            queued.append(True)
            conv.send(loop_pb2.ClientMessage(queue=loop_pb2.QueueInput(input="and the second question")))

    events = stack.start(sid, "what is in missing.txt?").drain(on_event)
    assert [e.turn_finished.text for e in events if e.WhichOneof("event") == "turn_finished"] == [
        "The file is missing and bash was refused.", "Second turn done."]
    failed = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"]
    assert sorted((r.tool, r.ok, r.error.code) for r in failed) == [
        ("bash", False, "denied_by_user"), ("read", False, "not_found")]
    assert any(e.WhichOneof("event") == "degraded" and e.degraded.component.startswith("memory") for e in events)
    return {"sid": sid, "ws": str(workspace), "requests": len(fake.chat_requests)}


def test_overview_shows_the_session_with_the_totals_the_fake_model_served(traced: dict[str, Any]) -> None:
    done = cli("trace", "overview", "--format", "json", "-w", traced["ws"])
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (row,) = report["sessions"]
    assert row["session"] == traced["sid"] and row["turns"] == 2 and row["files"] == 2 and row["marks"] == []
    assert row["steps"] == traced["requests"] == 3
    assert row["prompt_tokens"] == sum(u["prompt_tokens"] for u in USAGE)
    assert row["completion_tokens"] == sum(u["completion_tokens"] for u in USAGE)
    assert row["cached_tokens"] == sum(u["cached_tokens"] for u in USAGE)
    assert row["cache_hit_rate"] == pytest.approx(2500 / 4400)
    assert report["total"]["prompt_tokens"] == row["prompt_tokens"] and row["cost_usd"] is None
    table = cli("trace", "overview", "-w", traced["ws"])
    assert table.returncode == 0 and traced["sid"][:12] in table.stdout and "TOTAL" in table.stdout
    assert "4400" in table.stdout and "57%" in table.stdout


def _parsed(text: str) -> ExportTraceServiceRequest:
    data = json.loads(text)
    for span in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return ParseDict(data, ExportTraceServiceRequest())


def test_the_otlp_export_is_a_span_tree_with_failures_marked_and_two_exports_match(traced: dict[str, Any]) -> None:
    first = cli("trace", "export", "--session", traced["sid"][:8], "--format", "otlp-json", "-w", traced["ws"])
    second = cli("trace", "export", "--session", traced["sid"], "--format", "otlp-json", "-w", traced["ws"])
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    spans = list(_parsed(first.stdout).resource_spans[0].scope_spans[0].spans)
    (root,) = [s for s in spans if not s.parent_span_id]
    turns = [s for s in spans if s.parent_span_id == root.span_id]
    assert len(turns) == 2
    under_first = {s.name for s in spans if s.parent_span_id == turns[0].span_id}
    assert under_first == {"chat fake-model", "execute_tool read", "execute_tool bash"}
    assert [s.name for s in spans if s.parent_span_id == turns[1].span_id] == ["chat fake-model"]
    tools = {s.name: s for s in spans if s.name.startswith("execute_tool")}
    assert all(t.status.code == 2 for t in tools.values())
    bash_attrs = {a.key: a.value.string_value for a in tools["execute_tool bash"].attributes}
    assert bash_attrs["ai_coding.tool.status"] == "refused" and bash_attrs["error.type"] == "denied_by_user"
    events = [e.name for e in turns[0].events]
    assert "ai_coding.degraded" in events and "ai_coding.approval" in events
    assert "missing.txt" not in first.stdout  # arguments only with --full
    full = cli("trace", "export", "--session", traced["sid"], "--format", "otlp-json", "--full", "-w", traced["ws"])
    assert "missing.txt" in full.stdout


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def test_the_html_export_renders_in_headless_chromium_with_the_turns_and_tool_names(traced: dict[str, Any],
                                                                                    tmp_path: Path) -> None:
    page = tmp_path / "trace.html"
    done = cli("trace", "export", "--session", traced["sid"], "--format", "html", "--out", str(page), "-w",
               traced["ws"])
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert "<script" not in html and "href=" not in html and "turn 2" in html
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium on PATH (scripts/setup_tests.sh installs the apt package `chromium`)")
    profile = tempfile.mkdtemp(prefix="aic-chromium-")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}"]
    shot = tmp_path / "shot.png"
    try:
        dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                             timeout=90, check=False)
        if dom.returncode != 0 or "<html" not in dom.stdout:
            pytest.skip(f"chromium could not start here (exit {dom.returncode}): {dom.stderr.strip()[-300:]}")
        subprocess.run([browser, *flags, "--window-size=1200,2000", f"--screenshot={shot}", page.as_uri()],
                       capture_output=True, timeout=90, check=False)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert "turn 1" in dom.stdout and "turn 2" in dom.stdout
    assert "read" in dom.stdout and "bash" in dom.stdout and "denied_by_user" in dom.stdout
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, len(png)  # a rendered page, not a blank one


def test_prune_keeps_a_session_active_today_and_reports_what_it_would_remove(traced: dict[str, Any]) -> None:
    done = cli("trace", "prune", "--older-than", "1", "-w", traced["ws"])
    assert done.returncode == 0 and "removed 0 session trace(s)" in done.stdout
    assert os.path.isdir(os.path.join(traced["ws"], ".ai-coding", "traces", traced["sid"]))
    bad = cli("trace", "export", "--session", "nope", "-w", traced["ws"])
    assert bad.returncode == 2 and "no trace of a session 'nope'" in bad.stderr
