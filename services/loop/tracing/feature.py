"""The trace writer as a session feature: every event to the turn's trace file, live export."""

from __future__ import annotations

import time

from services.loop.core.events import Event
from services.loop.core.feature import Feature, FeatureHost, RewindPoint
from services.loop.core.sessions import Session
from services.loop.core.turn_events import Degraded
from services.loop.tracing.writer import TraceWriter


class TracingFeature(Feature):
    """Writes ``.ai-coding/traces/<session>/turn-<n>.jsonl`` (off with ``loop.traces: false``)."""

    name = "tracing"

    def __init__(self, host: FeatureHost) -> None:
        super().__init__()
        self.host = host
        deps, session = host.deps, host.session
        export = deps.span_export if deps.traces else None
        self.trace = TraceWriter(session.workspace, session.id, on_turn=export.turn_done if export else None,
                                 on_turn_start=export.turn_started if export else None) if deps.traces else None
        self.export = export
        if export is not None:
            export.watch(session.id, self._export_failed)

    def _export_failed(self, reason: str) -> None:
        """The live trace exporter could not send this session's spans (told once per outage)."""
        self.host.emit_now(Degraded(component="trace_export", reason=reason))  # the exporter tells it inside a turn

    def on_event(self, event: Event) -> None:
        if self.trace is not None:
            self.trace.record(event)

    def turn_starting(self, number: int) -> None:
        if self.trace is not None:
            self.trace.start_turn(number)

    def turn_ended(self) -> None:
        if self.trace is not None:
            self.trace.end_turn()

    def rewind(self, session: Session, point: RewindPoint) -> None:
        if self.trace is not None:
            self.trace.rewind(point.turn, int(time.time()))

    async def shutdown(self) -> None:
        if self.export is not None:
            self.export.unwatch(self.host.session.id)
