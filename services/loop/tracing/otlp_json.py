"""Spans as an OTLP/JSON ``ExportTraceServiceRequest`` (the file a collector or a viewer imports).

The OTLP/JSON encoding: lowerCamelCase keys, trace and span ids as hex strings,
enums as integers, 64-bit integers (times, int attributes) as decimal strings.
"""

from __future__ import annotations

from typing import Any

from services.kernel import __version__
from services.loop.tracing.spans import AGENT_NAME, AttrValue, Span

_KIND = {"internal": 1, "client": 3}
_STATUS = {"unset": 0, "ok": 1, "error": 2}


def _value(value: AttrValue) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [{"stringValue": item} for item in value]}}
    return {"stringValue": value}


def _attributes(attrs: dict[str, AttrValue]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in attrs.items()]


def _nanos(ts: float) -> str:
    return str(round(ts * 1e9))


def span_json(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": span.trace_id.hex(), "spanId": span.span_id.hex()}
    if span.parent_id is not None:
        out["parentSpanId"] = span.parent_id.hex()
    out.update({"name": span.name, "kind": _KIND[span.kind], "startTimeUnixNano": _nanos(span.start),
                "endTimeUnixNano": _nanos(span.end), "attributes": _attributes(span.attributes)})
    if span.events:
        out["events"] = [{"timeUnixNano": _nanos(e.ts), "name": e.name, "attributes": _attributes(e.attributes)}
                         for e in span.events]
    status: dict[str, Any] = {"code": _STATUS[span.status]}
    if span.status_message:
        status["message"] = span.status_message
    out["status"] = status
    return out


def export_request(spans: list[Span]) -> dict[str, Any]:
    """One resource (this agent), one instrumentation scope, every span."""
    return {"resourceSpans": [{
        "resource": {"attributes": _attributes({"service.name": AGENT_NAME, "service.version": __version__})},
        "scopeSpans": [{"scope": {"name": AGENT_NAME, "version": __version__},
                        "spans": [span_json(span) for span in spans]}],
    }]}
