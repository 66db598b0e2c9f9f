"""Trace files written by the loop, read back: reports, span trees, exports, overview, prune."""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path
from typing import Any

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from services.loop.core.turn_events import LayerStat, TurnStarted
from services.loop.tracing import overview as ov
from services.loop.tracing import store
from services.loop.tracing.export import render_export
from services.loop.tracing.report import session_reports, turn_report
from services.loop.tracing.spans import session_tree
from tests.unit.loop.tracefixtures import Recorder

SID = "5e55c0de-0000-4000-8000-000000000001"


def _recorded(tmp_path: Path, sid: str = SID) -> Recorder:
    rec = Recorder(tmp_path, sid)
    rec.turn(1, tools=[("c1", "read", True, ""), ("c2", "bash", False, "exit_nonzero"),
                       ("c3", "bash", False, "denied_by_user")], denied="c3", degraded="memory_recall",
             queued="and then this", compaction=[LayerStat("L1", removed=3, before_tokens=5000, after_tokens=4000),
                                                 LayerStat("L3", rewritten=2, before_tokens=4000, after_tokens=2000)])
    rec.turn(2, cached=None)
    return rec


def test_a_turn_started_right_after_another_gets_its_own_complete_file(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, SID)
    rec.turn(1)
    rec.writer.start_turn(2)
    rec.emit(2, TurnStarted(2, "queued", "fake-model"))
    rec.writer.end_turn()  # turn 1's end-of-turn housekeeping runs late, after turn 2 began
    rec.turn(2)
    lines = store.read_lines(tmp_path / ".ai-coding" / "traces" / SID / "turn-2.jsonl")
    assert [line["kind"] for line in lines][-1] == "turn_finished"
    summary = store.read_summary(tmp_path / ".ai-coding" / "traces" / SID)
    assert [t["turn"] for t in summary.turns] == [1, 2]


def test_the_summary_keeps_earlier_turns_when_a_new_writer_takes_over(tmp_path: Path) -> None:
    Recorder(tmp_path, SID).turn(1)
    later = Recorder(tmp_path, SID, ts=1_700_000_100.0, seq=100)  # a restarted loop
    later.turn(2)
    summary = store.read_summary(tmp_path / ".ai-coding" / "traces" / SID)
    assert [t["turn"] for t in summary.turns] == [1, 2]
    assert summary.turns[0]["tool_calls"] == 0 and summary.turns[1]["usage"]["prompt_tokens"] == 100


def test_a_report_has_steps_tools_refusals_degradations_compaction_layers_and_queued_input(tmp_path: Path) -> None:
    _recorded(tmp_path)
    ref = store.sessions(tmp_path)[0]
    first = session_reports(ref)[0]
    assert [s.number for s in first.steps] == [1, 2] and first.tokens.prompt == 200 and first.tokens.cached == 120
    assert [(t.tool, t.status) for t in first.tools] == [("read", "ok"), ("bash", "failed"), ("bash", "refused")]
    assert [d.component for d in first.degraded] == ["memory_recall"]
    assert first.approvals[0].decision == "deny" and first.queued == ["and then this"]
    (compaction,) = first.compactions
    assert compaction.layer("L1") is not None and compaction.layer("L2") is None and compaction.layer("L4") is None
    summary = ref.summary().turns[0]
    assert (summary["tool_calls"], summary["tool_failures"], summary["refusals"], summary["degraded"]) == (3, 1, 1, 1)


def _span_json(tmp_path: Path, full: bool = False) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(render_export(store.sessions(tmp_path)[0], "otlp-json", full))
    return loaded


def _parsed(data: dict[str, Any]) -> ExportTraceServiceRequest:
    """OTLP/JSON ids are hex; the protobuf JSON mapping wants base64 for bytes."""
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return ParseDict(data, ExportTraceServiceRequest())


def test_the_otlp_export_parses_as_an_export_request_with_a_session_turn_step_tool_tree(tmp_path: Path) -> None:
    _recorded(tmp_path)
    request = _parsed(_span_json(tmp_path))
    spans = list(request.resource_spans[0].scope_spans[0].spans)
    by_id = {s.span_id: s for s in spans}
    (root,) = [s for s in spans if not s.parent_span_id]
    assert root.name.startswith("session ")
    turns = [s for s in spans if s.parent_span_id == root.span_id]
    assert [t.name for t in turns] == ["invoke_agent ai-coding"] * 2
    children = [s.name for s in spans if s.parent_span_id == turns[0].span_id]
    assert children.count("chat fake-model") == 2 and "execute_tool read" in children and "compaction" in children
    assert all(s.parent_span_id in by_id for s in spans if s.parent_span_id)
    assert len({s.trace_id for s in spans}) == 1
    attrs = {a.key: a.value for a in next(s for s in spans if s.name == "chat fake-model").attributes}
    assert attrs["gen_ai.operation.name"].string_value == "chat"
    assert attrs["gen_ai.request.model"].string_value == "fake-model"
    assert attrs["gen_ai.usage.input_tokens"].int_value == 100
    assert attrs["gen_ai.usage.cache_read.input_tokens"].int_value == 60
    failed = next(s for s in spans if s.name == "execute_tool bash")
    assert failed.status.code == 2  # STATUS_CODE_ERROR
    layers = [e for e in next(s for s in spans if s.name == "compaction").events]
    assert [(dict((a.key, a.value) for a in e.attributes)["ai_coding.triggered"].bool_value) for e in layers] == [
        True, False, True, False]


def test_two_exports_are_byte_identical_and_bodies_appear_only_with_full(tmp_path: Path) -> None:
    _recorded(tmp_path)
    ref = store.sessions(tmp_path)[0]
    assert render_export(ref, "otlp-json") == render_export(ref, "otlp-json")
    assert render_export(ref, "html") == render_export(ref, "html")
    assert "question 1" not in render_export(ref, "otlp-json") and "output of read" not in render_export(ref, "html")
    assert "question 1" in render_export(ref, "otlp-json", full=True)
    assert "output of read" in render_export(ref, "html", full=True)


def test_subagent_runs_nest_under_their_calling_tool_with_ids_derived_from_their_scope(tmp_path: Path) -> None:
    _recorded(tmp_path)
    path = tmp_path / ".ai-coding" / "traces" / SID / "turn-1.jsonl"
    lines = store.read_lines(path)
    base = max(line["seq"] for line in lines)
    scoped = []
    for n, scope in enumerate(("run-a", "run-b")):  # two runs with identical inner events
        for i, kind in enumerate(("turn_started", "model_step_finished", "turn_finished")):
            scoped.append({"seq": base + 10 * n + i + 1, "ts": 1_700_000_050.0 + i, "turn": 1, "kind": kind,
                           "scope": scope, "parent_call_id": "c1", "step": 1, "latency_ms": 5.0,
                           "usage": {"prompt_tokens": 7}, "status": "completed", "model": "sub-model"})
    report = turn_report(SID, 1, lines + scoped)
    reader = next(t for t in report.tools if t.call_id == "c1")
    assert [run.scope for run in reader.subagents] == ["run-a", "run-b"]
    spans = session_tree(SID, [report])
    tool_span = next(s for s in spans if s.name == "execute_tool read")
    subs = [s for s in spans if s.attributes.get("ai_coding.scope")]
    assert {s.parent_id for s in subs if s.name.startswith("invoke_agent")} == {tool_span.span_id}
    assert len({s.span_id for s in spans}) == len(spans)  # the twin runs do not collide


def test_the_html_page_is_self_contained_and_escapes_every_trace_string(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, SID)
    rec.turn(1, tools=[("c1", '<script>alert("x")</script>', False, "exit_nonzero")])
    page = render_export(store.sessions(tmp_path)[0], "html", full=True)
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "question 1 &lt;b&gt;" in page
    assert "href=" not in page and "src=" not in page and "http" not in page.replace("http-equiv", "")


def test_overview_counts_marks_broken_summaries_and_takes_age_from_the_trace_not_the_mtime(tmp_path: Path) -> None:
    _recorded(tmp_path, "aaaa1111")
    Recorder(tmp_path, "bbbb2222").turn(1)
    Recorder(tmp_path, "cccc3333").turn(1)
    traces = tmp_path / ".ai-coding" / "traces"
    (traces / "bbbb2222" / "summary.json").write_text("{ not json")
    (traces / "cccc3333" / "summary.json").unlink()
    (traces / "aaaa1111" / "turn-3.jsonl").write_text("")  # a file the summary does not know
    for d in traces.iterdir():
        os.utime(d, (time.time(), time.time()))  # copied without times: every mtime is "now"
    now = 1_700_000_000.0 + 30 * 86_400
    rows = {r.session: r for r in ov.overview(store.sessions(tmp_path), now)}
    first = rows["aaaa1111"]
    assert (first.turns, first.files, first.steps, first.prompt_tokens, first.cached_tokens) == (2, 3, 3, 300, 120)
    assert any("mismatch" in m for m in first.marks) and first.age_seconds > 29 * 86_400
    assert rows["bbbb2222"].marks == ["summary.json corrupt"] and rows["bbbb2222"].turns == 0
    assert rows["cccc3333"].marks == ["summary.json missing"]
    total = ov.total(list(rows.values()))
    assert total.turns == 2 and total.prompt_tokens == 300
    assert ov.overview(store.sessions(tmp_path), now, since_days=7) == []


def test_prune_removes_only_sessions_older_than_the_cutoff_by_their_own_timestamps(tmp_path: Path) -> None:
    Recorder(tmp_path, "old00000").turn(1)
    Recorder(tmp_path, "new00000", ts=1_700_000_000.0 + 20 * 86_400).turn(1)
    now = 1_700_000_000.0 + 21 * 86_400
    old = list(store.older_than(store.sessions(tmp_path), 10, now))
    assert store.prune(old) == ["old00000"]
    assert [r.session_id for r in store.sessions(tmp_path)] == ["new00000"]


def test_compaction_rows_list_l1_to_l4_with_untriggered_layers_and_then_any_other_layer(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, SID)
    rec.turn(1, compaction=[LayerStat("L3", rewritten=2), LayerStat("fallback")])
    (fact,) = session_reports(store.sessions(tmp_path)[0])[0].compactions
    assert [(name, layer is not None) for name, layer in fact.rows()] == [
        ("L1", False), ("L2", False), ("L3", True), ("L4", False), ("fallback", True)]
    page = render_export(store.sessions(tmp_path)[0], "html")
    assert page.count("not triggered") == 3 and "<td>fallback</td>" in page
