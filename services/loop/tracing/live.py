"""Live trace export: each finished turn's spans go to an OTLP/HTTP collector.

Configured by ``tracing.otlp.endpoint`` in the user config (an execution key: it sends
data to an endpoint, so a project file cannot set it). Built on the OpenTelemetry SDK:
the spans the file export would show (services/loop/tracing/spans.py, same ids) are
handed to a ``BatchSpanProcessor``, which queues them in memory (bounded: past
``max_queue_spans`` it drops, never blocks) and posts them from its own thread with
the OTLP/HTTP exporter. A turn never waits for, or fails because of, the collector:
when an export fails, each session whose spans it carried gets one ``Degraded``
event (component ``trace_export``), and one more only after an export succeeded again.

The SDK costs ~0.35 s to import (measured here with ``-X importtime``), so it is
imported when an endpoint is configured, by the loop only; the client never imports it.
Each turn's spans name the session span as their parent; the session span itself
(which lasts as long as the session) is in ``ai-coding trace export`` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from services.kernel import __version__
from services.loop.tracing.report import turn_report
from services.loop.tracing.spans import AGENT_NAME, Span, span_id, turn_spans

log = logging.getLogger("ai_coding.loop.traces")

COMPONENT = "trace_export"
SHUTDOWN_DEADLINE_S = 2.0
"""How long the loop's shutdown waits for the last spans to go out."""


@dataclass
class OtlpConfig:
    """Config section ``tracing.otlp`` (user config only). Live export needs ``loop.traces: true``."""

    endpoint: str = ""
    """OTLP/HTTP traces URL, e.g. ``http://127.0.0.1:4318/v1/traces``; empty (default): no live export."""
    timeout_seconds: float = 5.0
    """How long one export request may take before it counts as failed (default 5)."""
    max_queue_spans: int = 2048
    """Spans held in memory while the collector is slow or away; newer ones are dropped past this."""
    batch_delay_ms: float = 500.0
    """How long the exporter waits to batch spans before sending (default 500 ms)."""


class LiveExporter:
    """One per loop process: turns' spans in, OTLP/HTTP out, failures reported per session."""

    def __init__(self, config: OtlpConfig) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.endpoint = config.endpoint
        self._lock = threading.Lock()
        self._watchers: dict[str, tuple[asyncio.AbstractEventLoop, Callable[[str], None]]] = {}
        self._told: set[str] = set()
        self.exported = 0
        self.failures = 0
        inner = OTLPSpanExporter(endpoint=config.endpoint, timeout=config.timeout_seconds)
        queue = max(1, config.max_queue_spans)
        # The SDK refuses a batch larger than the queue (ValueError at start: a crash loop on
        # `max_queue_spans: 128`); the batch follows the queue down from the SDK's 512.
        self._processor = BatchSpanProcessor(
            _watched(inner, self._result), max_queue_size=queue, max_export_batch_size=min(512, queue),
            schedule_delay_millis=config.batch_delay_ms, export_timeout_millis=config.timeout_seconds * 1000)

    def watch(self, session_id: str, report: Callable[[str], None]) -> None:
        """``report(reason)`` runs on the calling event loop when an export of this session fails."""
        with self._lock:
            self._watchers[session_id] = (asyncio.get_running_loop(), report)

    def unwatch(self, session_id: str) -> None:
        with self._lock:
            self._watchers.pop(session_id, None)
            self._told.discard(session_id)

    def turn_done(self, session_id: str, turn: int, lines: list[dict[str, Any]]) -> None:
        """Queue a finished turn's spans (returns at once; never raises)."""
        try:
            parent = span_id(session_id, 0, "session")
            for span in turn_spans(turn_report(session_id, turn, lines), parent):
                self._processor.on_end(_readable(span))
        except Exception:  # a bug here must not reach the turn
            log.exception("building the spans of turn %d of session %s failed", turn, session_id)

    def _result(self, sessions: set[str], ok: bool, reason: str) -> None:
        """From the exporter's thread, after each batch."""
        with self._lock:
            if ok:
                self.exported += 1
                self._told -= sessions
                return
            self.failures += 1
            fresh = [s for s in sessions if s not in self._told and s in self._watchers]
            self._told.update(fresh)
            calls = [self._watchers[s] for s in fresh]
        for loop, report in calls:
            with contextlib.suppress(RuntimeError):  # that loop has closed
                loop.call_soon_threadsafe(report, f"spans not sent to {self.endpoint}: {reason}")

    def flush(self, timeout_seconds: float = 5.0) -> bool:
        """Send what is queued now (blocking; tests and shutdown)."""
        return bool(self._processor.force_flush(int(timeout_seconds * 1000)))

    def shutdown(self, deadline_seconds: float = SHUTDOWN_DEADLINE_S) -> bool:
        """Send what is queued and stop, within ``deadline_seconds`` whatever the collector does
        (a blackholed one held the loop's exit 7-10 s); past it the sending is abandoned (its thread
        is a daemon, so the process still exits) and the log says which deadline ended it."""
        worker = threading.Thread(target=self._processor.shutdown, name="otlp-shutdown", daemon=True)
        worker.start()
        worker.join(deadline_seconds)
        if worker.is_alive():
            log.warning("trace export to %s stopped at its %g s shutdown deadline (tracing.otlp: the collector "
                        "did not answer); the spans still queued were not sent", self.endpoint, deadline_seconds)
            return False
        return True


def _watched(inner: Any, on_result: Callable[[set[str], bool, str], None]) -> Any:
    """A SpanExporter around ``inner`` that tells the LiveExporter how each batch went."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Watched(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            sessions = {str((s.attributes or {}).get("gen_ai.conversation.id", "")) for s in spans}
            try:
                result: SpanExportResult = inner.export(spans)
                reason = "the collector refused or did not answer"
            except Exception as exc:  # the exporter's own bug or an unexpected transport error
                result, reason = SpanExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
            on_result(sessions, result == SpanExportResult.SUCCESS, reason)
            return result

        def shutdown(self) -> None:
            inner.shutdown()

    return Watched()


def _readable(span: Span) -> Any:
    """Our span as the SDK's ReadableSpan, with our ids and times."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    def context(span_bytes: bytes) -> SpanContext:
        return SpanContext(int.from_bytes(span.trace_id, "big"), int.from_bytes(span_bytes, "big"), is_remote=False,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))

    code = {"unset": StatusCode.UNSET, "ok": StatusCode.OK, "error": StatusCode.ERROR}[span.status]
    return ReadableSpan(
        name=span.name, context=context(span.span_id),
        parent=context(span.parent_id) if span.parent_id is not None else None,
        resource=Resource({"service.name": AGENT_NAME, "service.version": __version__}),
        attributes=dict(span.attributes),
        events=[Event(e.name, dict(e.attributes), timestamp=round(e.ts * 1e9)) for e in span.events],
        kind=SpanKind.CLIENT if span.kind == "client" else SpanKind.INTERNAL,
        status=Status(code, span.status_message or None) if code is StatusCode.ERROR else Status(code),
        start_time=round(span.start * 1e9), end_time=round(span.end * 1e9),
        instrumentation_scope=InstrumentationScope(AGENT_NAME, __version__))
