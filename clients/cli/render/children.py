"""Subagent children on screen: a child's events nested under its subAgent call, and a background
child's end."""

from __future__ import annotations

from clients.cli import views
from clients.cli.cost import human_count
from clients.cli.render.asks import AskLines
from clients.cli.render.screen import Screen
from clients.cli.render.text import (
    background_done_line,
    human_duration,
    one_line,
    schema_errors,
    tool_result_summary,
)
from clients.cli.textsafe import literal
from services.kernel.titles import tool_title


class ChildLines:
    """A child's events as indented dim lines; its approvals as the ordinary prompt, labelled."""

    def __init__(self, screen: Screen, asks: AskLines) -> None:
        self.screen = screen
        self.asks = asks

    def scoped(self, scope: views.SubagentScope, body: views.Body) -> None:
        """A child's event, relayed by its parent: a few kinds are shown, the rest stay in its packet."""
        who = scope.name or scope.run_id
        line = self.screen.line
        if isinstance(body, views.SubagentStarted):
            mode = "background " if body.background else ""
            line(literal(f"  ↳ {mode}subagent {who} [{body.run_id}] · {one_line(body.task, 80)}", "dim"))
        elif isinstance(body, views.ToolFinished):
            result = body.result
            mark = "✓" if result.ok else "✗"
            summary = tool_result_summary(result)
            line(literal(f"    {who} {mark} {tool_title(result.tool, '{}')}" + (f" · {summary}" if summary else ""),
                         "dim"))
        elif isinstance(body, views.ApprovalRequested):
            self.asks.approval_requested(body, label=f"subagent {who} (task: {one_line(scope.task, 60)})")
        elif isinstance(body, views.ApprovalResolved):
            self.asks.approval_resolved(body)
        elif isinstance(body, views.SubagentFinished):
            line(literal(f"  ↳ subagent {who} {body.status}" + (f" ({body.exit_reason})" if body.exit_reason else "")
                         + f" · {human_count(body.usage.total_tokens)} tokens · {human_duration(body.elapsed_ms)}",
                         "dim"))
            errors = schema_errors(body.packet_json)
            if errors:
                line(literal(f"  ⚠ subagent {who}: its JSON does not match the output_schema: " + "; ".join(errors),
                             "yellow"))

    def background_done(self, ev: views.BackgroundTaskDone) -> None:
        """'  ⟲ background subagent NAME [run] completed · summary · 4.2s'."""
        self.screen.line(literal(background_done_line(ev), "dim"))
