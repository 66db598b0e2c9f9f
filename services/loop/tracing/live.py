"""Live trace export: each finished turn's spans go to an OTLP/HTTP collector.

Configured by ``tracing.otlp.endpoint`` in the user config (an execution key: it sends
data to an endpoint, so a project file cannot set it). The spans the file export would
show (services/loop/tracing/spans.py, same ids) wait in one bounded in-memory queue
(``max_queue_spans``; past it the newest are dropped and counted, a turn never blocks)
and one thread of ours posts them with the OpenTelemetry SDK's OTLP/HTTP exporter. A
batch that fails stays at the head of the queue and is sent again, with a backoff of up
to :data:`MAX_BACKOFF_SECONDS`, until the collector takes it: spans of turns run while
the collector was away arrive once it is back (the SDK's batch processor dropped them
after its retries).

A turn never waits for, or fails because of, the collector. When the exporter learns that
the collector is away, each session hears it once per outage as a ``Degraded`` event
(component ``trace_export``), inside a turn: at once when the session is in a turn, else
at the start of its next one. The collector is probed with an empty export when the first
session is watched, so even the first turn of ``ai-coding run`` is told.

The session span (the root every turn names as its parent) covers all of a session's
turns, so it is sent when the loop stops (``shutdown``) or the session is unwatched.

The SDK costs ~0.35 s to import (measured here with ``-X importtime``), so it is
imported when an endpoint is configured, by the loop only; the client never imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.kernel import __version__
from services.loop.tracing.report import TurnReport, turn_report
from services.loop.tracing.spans import AGENT_NAME, Span, session_span, span_id, turn_spans

log = logging.getLogger("ai_coding.loop.traces")

COMPONENT = "trace_export"
SHUTDOWN_DEADLINE_S = 3.0
"""How long the loop's shutdown gives the queue, then the sending thread (each), before it goes."""
MAX_BATCH_SPANS = 512
MAX_BACKOFF_SECONDS = 5.0
PROBE_SECONDS = 2.0
_ALL = "*"  # a probe's failure concerns every watched session


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
    """One per loop process: turns' spans in, OTLP/HTTP out, outages told to each session in a turn."""

    def __init__(self, config: OtlpConfig, exporter: Any = None) -> None:
        """``exporter`` (a SpanExporter) replaces the OTLP/HTTP one (tests)."""
        if exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter(endpoint=config.endpoint, timeout=config.timeout_seconds)
        self.endpoint = config.endpoint
        self._inner = exporter
        self._limit = max(1, config.max_queue_spans)
        self._delay = max(config.batch_delay_ms, 0.0) / 1000.0
        self._timeout = max(config.timeout_seconds, 0.1)
        self._cond = threading.Condition()
        self._queue: deque[Any] = deque()
        self._watchers: dict[str, tuple[asyncio.AbstractEventLoop, Callable[[str], None]]] = {}
        self._reports: dict[str, list[TurnReport]] = {}
        self._in_turn: set[str] = set()
        self._owed: set[str] = set()  # told at their next turn
        self._told: set[str] = set()  # told during this outage
        self._down_reason = ""  # "" while the collector takes our spans
        self._probe = False
        self._stopping = False
        self.exported = 0
        self.failures = 0
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="otlp-export", daemon=True)
        self._thread.start()

    # -- sessions ------------------------------------------------------------------------------------

    def watch(self, session_id: str, report: Callable[[str], None]) -> None:
        """``report(reason)`` runs on the calling event loop, inside a turn, when this session's spans
        cannot go out."""
        with self._cond:
            first = not self._watchers
            self._watchers[session_id] = (asyncio.get_running_loop(), report)
            if first:
                self._probe = True
                self._cond.notify()

    def unwatch(self, session_id: str) -> None:
        """The session closed: its session span goes out, it is told nothing more."""
        with self._cond:
            self._watchers.pop(session_id, None)
            self._told.discard(session_id)
            self._owed.discard(session_id)
            self._in_turn.discard(session_id)
            reports = self._reports.pop(session_id, [])
        if reports:
            self._put([session_span(session_id, reports)])

    def turn_started(self, session_id: str) -> None:
        """A turn of the session began: an outage it was not told of yet is told now."""
        with self._cond:
            self._in_turn.add(session_id)
            tell = session_id in self._owed or (bool(self._down_reason) and session_id not in self._told)
            self._owed.discard(session_id)
            if tell:
                self._told.add(session_id)
            reason = self._down_reason
        if tell:
            self._report([session_id], reason or "the collector did not take the last spans")

    def turn_done(self, session_id: str, turn: int, lines: list[dict[str, Any]]) -> None:
        """Queue a finished turn's spans (returns at once; never raises)."""
        with self._cond:
            self._in_turn.discard(session_id)
        try:
            report = turn_report(session_id, turn, lines)
            light = TurnReport(session_id, turn, start=report.start, end=report.end, tokens=report.tokens)
            with self._cond:  # what the session span needs, not the turn's steps and tools
                self._reports.setdefault(session_id, []).append(light)
            self._put(turn_spans(report, span_id(session_id, 0, "session")))
        except Exception:  # a bug here must not reach the turn
            log.exception("building the spans of turn %d of session %s failed", turn, session_id)

    # -- the queue -----------------------------------------------------------------------------------

    def _put(self, spans: list[Span]) -> None:
        readable = [_readable(span) for span in spans]
        with self._cond:
            room = max(self._limit - len(self._queue), 0)
            self._queue.extend(readable[:room])
            self.dropped += len(readable) - min(room, len(readable))
            self._cond.notify()

    def _run(self) -> None:
        backoff = 0.0
        while True:
            with self._cond:
                while not self._stopping and not self._queue and not self._probe:
                    self._cond.wait()
                if self._stopping and not self._queue:
                    return
                probe, self._probe = self._probe, False
            if not probe and not backoff:
                self._pause(self._delay)
            with self._cond:
                batch = [self._queue[n] for n in range(min(len(self._queue), MAX_BATCH_SPANS))]
            ok, reason = self._send(batch) if batch or not probe else self._probe_collector()
            with self._cond:
                if ok:
                    for _ in batch:
                        self._queue.popleft()
            self._result(batch, ok, reason)
            if ok:
                backoff = 0.0
                continue
            with self._cond:
                if self._stopping:
                    return  # shutdown gave up on what is left: the collector is away
            backoff = min(max(backoff * 2, 0.25), MAX_BACKOFF_SECONDS)
            self._pause(backoff)

    def _pause(self, seconds: float) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._stopping, timeout=seconds)

    def _probe_collector(self) -> tuple[bool, str]:
        """One empty export request, without the SDK's retries: is anyone taking spans there?"""
        import urllib.error
        import urllib.request

        request = urllib.request.Request(self.endpoint, data=b"", method="POST",
                                         headers={"Content-Type": "application/x-protobuf"})
        try:
            with urllib.request.urlopen(request, timeout=min(self._timeout, PROBE_SECONDS)) as reply:
                return 200 <= reply.status < 300, f"the collector answered HTTP {reply.status}"
        except urllib.error.HTTPError as exc:
            return False, f"the collector answered HTTP {exc.code}"
        except (OSError, ValueError) as exc:
            return False, f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"

    def _send(self, batch: list[Any]) -> tuple[bool, str]:
        from opentelemetry.sdk.trace.export import SpanExportResult

        try:
            ok = self._inner.export(batch) == SpanExportResult.SUCCESS
            return ok, "" if ok else "the collector refused or did not answer"
        except Exception as exc:  # the exporter's own bug or an unexpected transport error
            return False, f"{type(exc).__name__}: {exc}"

    def _result(self, batch: list[Any], ok: bool, reason: str) -> None:
        """After each send: an outage starts (told once per session, in a turn) or ends."""
        sessions = {str((s.attributes or {}).get("gen_ai.conversation.id", "")) for s in batch} or {_ALL}
        with self._cond:
            if ok:
                self.exported += 1
                self._down_reason = ""
                self._told.clear()
                self._owed.clear()
                return
            self.failures += 1
            self._down_reason = f"spans not sent to {self.endpoint}: {reason}"
            affected = set(self._watchers) if _ALL in sessions else sessions & set(self._watchers)
            fresh = affected - self._told
            now = sorted(s for s in fresh if s in self._in_turn)
            self._owed |= fresh - set(now)
            self._told.update(now)
            why = self._down_reason
        self._report(now, why)

    def _report(self, sessions: list[str], reason: str) -> None:
        with self._cond:
            calls = [self._watchers[s] for s in sessions if s in self._watchers]
        for loop, report in calls:
            with contextlib.suppress(RuntimeError):  # that loop has closed
                loop.call_soon_threadsafe(report, reason)

    # -- flush and stop ------------------------------------------------------------------------------

    @property
    def queued(self) -> int:
        """Spans waiting to go out."""
        with self._cond:
            return len(self._queue)

    def flush(self, timeout_seconds: float = 5.0) -> bool:
        """Wait until the queue is empty (blocking; tests and shutdown); False when it is not by then."""
        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            with self._cond:
                if not self._queue:
                    return True
                self._cond.notify()
            time.sleep(0.02)
        return self.queued == 0

    def shutdown(self, timeout_seconds: float = SHUTDOWN_DEADLINE_S) -> None:
        """Send every session's span and what is queued (within ``timeout_seconds`` in all; not waited
        for while the collector is away), then stop."""
        deadline = time.monotonic() + timeout_seconds
        with self._cond:
            sessions = list(self._reports)
        for session_id in sessions:
            self.unwatch(session_id)
        with self._cond:
            down = bool(self._down_reason)
        self.flush(0.0 if down else timeout_seconds)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._inner.shutdown()  # also cuts the SDK's retry wait of a send in flight
        self._thread.join(timeout=max(deadline - time.monotonic(), 0.0))
        if self._thread.is_alive() or self.queued:
            log.warning("trace export to %s stopped at its %g s shutdown deadline (tracing.otlp: the collector "
                        "did not answer); %d span(s) were not sent", self.endpoint, timeout_seconds, self.queued)


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
