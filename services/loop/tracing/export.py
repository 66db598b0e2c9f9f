"""One session's trace rendered in an export format (``ai-coding trace export``)."""

from __future__ import annotations

import json

from services.loop.tracing import html, otlp_json
from services.loop.tracing.report import session_reports
from services.loop.tracing.spans import session_tree
from services.loop.tracing.store import SessionRef


def render_export(ref: SessionRef, fmt: str, full: bool = False) -> str:
    """``fmt`` is ``html`` or ``otlp-json``; the same trace always renders to the same bytes."""
    reports = session_reports(ref)
    if fmt == "html":
        return html.render(ref.session_id, reports, full)
    if fmt == "otlp-json":
        request = otlp_json.export_request(session_tree(ref.session_id, reports, full))
        return json.dumps(request, indent=1, ensure_ascii=False) + "\n"
    raise ValueError(f"unknown export format {fmt!r}")
