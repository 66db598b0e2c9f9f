"""A session's trace as one self-contained HTML page.

Inline CSS, no script, no external link or resource; every string that comes from
the trace goes through ``html.escape`` (the page may be opened from a shared folder,
and tool output is whatever a command printed).
"""

from __future__ import annotations

import datetime
from html import escape

from services.loop.tracing.report import CompactionFact, Tokens, ToolFact, TurnReport

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1d1d1f;background:#fff}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
th{background:#f4f4f6}.ok{color:#17803d}.failed,.error{color:#b3261e}.refused{color:#a15c00}
.sub{margin-left:2em;border-left:3px solid #c7c7ee;padding-left:1em}pre{white-space:pre-wrap;background:#f7f7f7;
padding:.5em}.muted{color:#777}
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _time(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if ts else "-"


def _tokens(tokens: Tokens) -> str:
    cached = "" if tokens.cached is None else f" · cached {tokens.cached}"
    cost = "" if tokens.cost_usd is None else f" · ${tokens.cost_usd:.4f}"
    return f"prompt {tokens.prompt} · completion {tokens.completion}{cached}{cost}"


def _tool_rows(tools: list[ToolFact], full: bool) -> list[str]:
    rows = ["<table><tr><th>tool</th><th>status</th><th>ms</th><th>error</th></tr>"]
    for tool in tools:
        error = f"{tool.error_code}: {tool.error_message}" if tool.error_code else ""
        rows.append(f'<tr><td>{_e(tool.tool)} <span class="muted">{_e(tool.title)}</span></td>'
                    f'<td class="{_e(tool.status)}">{_e(tool.status)}</td><td>{tool.duration_ms:.0f}</td>'
                    f"<td>{_e(error)}</td></tr>")
        if full and (tool.arguments or tool.output):
            rows.append(f'<tr><td colspan="4"><pre>{_e(tool.arguments)}</pre><pre>{_e(tool.output)}</pre></td></tr>')
    rows.append("</table>")
    for tool in tools:
        for run in tool.subagents:
            rows.append(f'<div class="sub"><h3>subagent {_e(run.scope)} (from {_e(tool.tool)} '
                        f"{_e(tool.call_id)})</h3>{_turn_body(run, full)}</div>")
    return rows


def _egress_rows(tool: ToolFact) -> str:
    """The requests of a tool call's sandboxed command through the egress proxy."""
    rows = [f'<table><tr><th colspan="6">network of {_e(tool.tool)} {_e(tool.call_id)}</th></tr>',
            "<tr><th>request</th><th>verdict</th><th>by</th><th>up</th><th>down</th><th>why</th></tr>"]
    for r in tool.egress:
        css = "ok" if r.allowed else ("refused" if r.verdict == "refused" else "failed")
        by = r.rule or (f"granted {r.granted}" if r.granted else "")
        name = r.name + (f" ×{r.count}" if r.count > 1 else "")
        rows.append(f'<tr><td>{_e(name)}</td><td class="{css}">{_e(r.verdict)}</td><td>{_e(by)}</td>'
                    f"<td>{r.bytes_up}</td><td>{r.bytes_down}</td><td>{_e(r.reason)}</td></tr>")
    return "".join([*rows, "</table>"])


def _compaction_rows(fact: CompactionFact) -> str:
    rows = [f"<table><tr><th colspan=\"6\">compaction {_e(fact.reason)}: ~{fact.estimated_before} → "
            f"~{fact.estimated_after} tokens</th></tr>",
            "<tr><th>layer</th><th>removed</th><th>rewritten</th><th>skipped</th><th>before</th><th>after</th></tr>"]
    for name, layer in fact.rows():
        if layer is None:
            rows.append(f'<tr><td>{name}</td><td colspan="5" class="muted">not triggered</td></tr>')
        else:
            rows.append(f"<tr><td>{name}</td><td>{layer.removed}</td><td>{layer.rewritten}</td><td>{layer.skipped}"
                        f"</td><td>{layer.before_tokens}</td><td>{layer.after_tokens}</td></tr>")
    return "".join([*rows, "</table>"])


def _turn_body(report: TurnReport, full: bool) -> str:
    parts = [f'<p>status <b class="{_e(report.status)}">{_e(report.status)}</b>'
             + (f" ({_e(report.reason)})" if report.reason else "")
             + f" · model {_e(report.model)} · {report.iterations} steps · {report.duration_ms / 1000:.1f} s"
             f" · {_e(_tokens(report.tokens))} · started {_e(_time(report.start))}</p>"]
    if full:
        parts.append(f"<pre>{_e(report.input)}</pre><pre>{_e(report.text)}</pre>")
    if report.steps:
        parts.append("<table><tr><th>step</th><th>latency ms</th><th>prompt</th><th>completion</th>"
                     "<th>cached</th><th>finish</th></tr>")
        parts += [f"<tr><td>{s.number}</td><td>{s.latency_ms:.0f}</td><td>{s.tokens.prompt}</td>"
                  f"<td>{s.tokens.completion}</td><td>{'-' if s.tokens.cached is None else s.tokens.cached}</td>"
                  f"<td>{_e(s.finish_reason)}</td></tr>" for s in report.steps]
        parts.append("</table>")
    if report.tools:
        parts += _tool_rows(report.tools, full)
        parts += [_egress_rows(t) for t in report.tools if t.egress]
    parts += [_compaction_rows(c) for c in report.compactions]
    if report.degraded:
        parts.append("<p><b>degraded</b></p><ul>" + "".join(
            f"<li>{_e(d.component)}: {_e(d.reason)}</li>" for d in report.degraded) + "</ul>")
    refused = [t for t in report.tools if t.refused]
    if refused:
        parts.append("<p><b>refused</b></p><ul>" + "".join(
            f"<li>{_e(t.tool)}: {_e(t.error_code)}</li>" for t in refused) + "</ul>")
    if report.queued:
        parts.append(f"<p class=\"muted\">{len(report.queued)} input(s) queued during this turn</p>")
    for run in report.subagents:
        parts.append(f'<div class="sub"><h3>subagent {_e(run.scope)}</h3>{_turn_body(run, full)}</div>')
    return "".join(parts)


def render(session_id: str, reports: list[TurnReport], full: bool = False) -> str:
    """The page for one session."""
    tokens = Tokens()
    for report in reports:
        tokens = tokens.add(report.tokens)
    body = [f"<h1>ai-coding trace · session {_e(session_id)}</h1>",
            f"<p>{len(reports)} turns · {_e(_tokens(tokens))}</p>"]
    for report in sorted(reports, key=lambda r: r.turn):
        body.append(f"<h2>turn {report.turn}</h2>{_turn_body(report, full)}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>trace {_e(session_id)}</title><style>{_CSS}</style></head><body>"
            + "".join(body) + "</body></html>\n")
