"""The live exporter's queue and outage reporting, with a SpanExporter of this test standing in for
the collector's side (it accepts or refuses on command): held spans, one report per outage, in a turn."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from services.loop.tracing.live import LiveExporter, OtlpConfig


class Collector(SpanExporter):
    def __init__(self) -> None:
        self.up = threading.Event()
        self.spans: list[Any] = []

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        if not self.up.is_set():
            return SpanExportResult.FAILURE
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def _lines(session: str, turn: int) -> list[dict[str, Any]]:
    return [{"seq": 1, "ts": 100.0 + turn, "turn": turn, "kind": "turn_started", "model": "m", "input": "hi"},
            {"seq": 2, "ts": 100.5 + turn, "turn": turn, "kind": "turn_finished", "status": "completed",
             "text": "ok", "usage": {}, "iterations": 1}]


def _until(condition: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not condition():
        time.sleep(0.01)
    return bool(condition())


def test_spans_are_held_while_the_collector_refuses_and_one_report_comes_inside_the_next_turn() -> None:
    collector = Collector()

    async def main() -> list[str]:
        reports: list[str] = []
        exporter = LiveExporter(OtlpConfig(endpoint="http://127.0.0.1:9/v1/traces", batch_delay_ms=0), collector)
        exporter.watch("s1", reports.append)
        exporter.turn_done("s1", 1, _lines("s1", 1))  # between turns: nothing reported yet
        assert await asyncio.to_thread(_until, lambda: exporter.failures >= 1)
        await asyncio.sleep(0.05)
        assert reports == [] and exporter.queued == 1
        exporter.turn_started("s1")
        await asyncio.sleep(0.05)
        assert len(reports) == 1 and "127.0.0.1:9" in reports[0]
        exporter.turn_done("s1", 2, _lines("s1", 2))
        exporter.turn_started("s1")  # still down: already told during this outage
        await asyncio.sleep(0.3)
        assert len(reports) == 1
        collector.up.set()
        assert await asyncio.to_thread(_until, lambda: exporter.queued == 0)
        await asyncio.to_thread(exporter.shutdown)
        return reports

    asyncio.run(main())
    names = [s.name for s in collector.spans]
    assert names.count("invoke_agent ai-coding") == 2 and names[-1].startswith("session ")


def test_past_the_queue_limit_the_newest_spans_are_dropped_and_counted() -> None:
    collector = Collector()

    async def main() -> LiveExporter:
        exporter = LiveExporter(OtlpConfig(endpoint="http://127.0.0.1:9/v1/traces", max_queue_spans=1,
                                           batch_delay_ms=0), collector)
        exporter.watch("s1", lambda _: None)
        exporter.turn_done("s1", 1, _lines("s1", 1))
        exporter.turn_done("s1", 2, _lines("s1", 2))
        return exporter

    exporter = asyncio.run(main())
    assert exporter.queued == 1 and exporter.dropped == 1
    collector.up.set()
    exporter.shutdown()
    assert [s.name for s in collector.spans] == ["invoke_agent ai-coding"]  # the root found the queue full
