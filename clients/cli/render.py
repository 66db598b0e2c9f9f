"""Render the loop's turn events to a terminal (used by ``ai-coding run`` and the REPL).

The text boundary: every string that comes from outside (model text, tool
output, arguments, titles, previews, user input) reaches the console only as a
``rich.text.Text`` built by :func:`literal`, never as a ``str`` that rich would
parse as markup, and with terminal control characters made visible. So
``[bold]``, ``[/x]``, ``[path=/tmp/x]`` and ``ESC [31m`` / OSC sequences print
as the characters they are.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import assert_never

from rich.console import Console
from rich.text import Text

from clients.cli import approvals, cost, diffview, views
from clients.cli.cost import human_count
from clients.cli.textsafe import literal
from services.kernel.titles import tool_title

# How many lines of a running command's output show under its tool line.
CHUNK_LINES_SHOWN = 6
# In line-buffered mode, at most this many screen rows of an unfinished line stay pending.
PARTIAL_ROWS_KEPT = 3
_MAX_RESULT_CHARS = 80

STATUS_NAMES = {
    views.TurnStatus.COMPLETED: "completed",
    views.TurnStatus.MAX_ITERATIONS: "max iterations",
    views.TurnStatus.BUDGET: "budget",
    views.TurnStatus.TIMEOUT: "timeout",
    views.TurnStatus.INTERRUPTED: "interrupted",
    views.TurnStatus.APPROVAL_STOP: "stopped at approval",
    views.TurnStatus.FAILED: "failed",
    views.TurnStatus.ACCEPTANCE_FAILED: "acceptance failed",
    views.TurnStatus.PLAN_INCOMPLETE: "plan incomplete",
}
DECISION_NAMES = {
    views.Decision.ALLOW_ONCE: "allowed once",
    views.Decision.ALLOW_ALWAYS: "allowed for this session",
    views.Decision.DENY: "denied",
    views.Decision.STOP: "stopped",
}

_TASK_MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☑", "blocked": "⊘", "dropped": "✗"}


def one_line(text: str, limit: int = _MAX_RESULT_CHARS) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped:
            return stripped if len(stripped) <= limit else stripped[: limit - 1] + "…"
    return ""


def human_duration(ms: float) -> str:
    """Milliseconds as '350ms', '1.2s' or '2m05s'."""
    if ms < 1000:
        return f"{ms:.0f}ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def window_fill(context: views.ContextAssembled) -> str:
    """'ctx 12k/25.6k/32k' (last request / compaction threshold / window), "" when not known."""
    if not context.window_tokens:
        return ""
    return (f"ctx {human_count(context.estimated_tokens)}/{human_count(context.ceiling_tokens)}/"
            f"{human_count(context.window_tokens)}")


def layer_stats(ended: views.CompactionEnded) -> str:
    """'L2 12 rewritten · L4 -40 msgs' for the layers that did something."""
    parts = []
    for layer in ended.layers:
        done = [f"{layer.rewritten} rewritten" if layer.rewritten else "",
                f"-{layer.removed} msgs" if layer.removed else ""]
        if any(done):
            parts.append(f"{layer.name} " + " ".join(d for d in done if d))
    return " · ".join(parts)


def failed_before_work(finished: views.TurnFinished) -> bool:
    """A turn that failed before any model step or call (a refused key, a provider down): its
    reason is all there is to show, as one line; no handoff, no token footer."""
    return (finished.status == views.TurnStatus.FAILED and not finished.handoff and not finished.iterations
            and not finished.text.strip() and bool(finished.reason))


def status_line(finished: views.TurnFinished, context: views.ContextAssembled | None = None,
                reason_limit: int = 80) -> str:
    """'completed · 1.2k in / 56 out · $0.0031 · cache 80% · 3 steps · 2.3s · ctx 12k/25.6k/32k' for a
    finished turn ('usage not reported' instead of the tokens when the provider gave none)."""
    usage = finished.usage
    parts = [STATUS_NAMES.get(finished.status, "unknown")]
    if finished.reason:  # a completed turn has one only when its acceptance was verified
        parts[0] += f" ({one_line(finished.reason, reason_limit)})"
    parts += cost.footer_parts(cost.from_usage(usage))
    if finished.iterations:
        parts.append(f"{finished.iterations} step{'s' if finished.iterations != 1 else ''}")
    parts.append(human_duration(finished.duration_ms))
    fill = window_fill(context) if context is not None else ""
    if fill:
        parts.append(fill)
    return " · ".join(parts)


def plan_step_header(index: int, total: int, content: str) -> str:
    """``[plan] step 2/3: write the parser``: the head of a plan step's block (live and after /resume)."""
    return f"[plan] step {index}/{total}: {one_line(content, 100)}"


_OUTCOME_MARKS = {"done": "✓", "blocked": "✗", "stalled": "…", "open": "·"}


def receipt_line(r: views.PlanStepReceipt) -> str:
    """A plan item's receipt: outcome, proof grade, what it cost, its note."""
    parts = [f"  {_OUTCOME_MARKS.get(r.outcome, '?')} {r.outcome} · proof: {r.grade}"]
    if not r.attested:
        parts.append("done during planning (not attested)")
    else:
        parts.append(f"{r.attempts} attempt{'s' if r.attempts != 1 else ''} · {r.model_steps} steps · "
                     f"{human_count(r.tokens)} tokens · {human_duration(r.duration_ms)}")
    if r.note:
        parts.append(one_line(r.note, 80))
    return " · ".join(parts)


_EXIT_LINE = re.compile(r"^\(exit code (-?\d+)\)$")


def command_failure(result: views.ToolResult) -> str:
    """For a command that ran but exited non-zero (the tool worked, the command failed):
    "exit N · <its last output line>", the line that usually says why; else ""."""
    try:
        data = json.loads(result.data_json or "{}")
        code, stopped = data.get("exit_code"), data.get("status") == "stopped"
    except (ValueError, AttributeError):
        return ""
    if not result.ok or not isinstance(code, int) or code == 0 or stopped:  # a job job_stop ended: asked for
        return ""
    lines = [line for line in result.output.splitlines() if line.strip() and not _EXIT_LINE.match(line.strip())]
    return f"exit {code}" + (f" · {one_line(lines[-1])}" if lines else "")


def background_done_line(ev: views.BackgroundTaskDone, origin: str = "") -> str:
    """The one dim line a background child's end gets (``origin``: the session it ran in, when the
    user has moved to another)."""
    line = (f"  ⟲ background subagent {ev.name} [{ev.run_id}] {ev.status} · {one_line(ev.summary, 80)}"
            f" · {human_duration(ev.elapsed_ms)}")
    if ev.transcript_path:
        line += f" · full packet: {ev.transcript_path}"
    return line + (f" · from session {origin[:12]}" if origin else "")


def _schema_errors(packet_json: str) -> list[str]:
    """What a child's packet says about its output_schema (empty when valid or not asked for)."""
    try:
        packet = json.loads(packet_json) if packet_json else {}
    except ValueError:
        return []
    if not isinstance(packet, dict) or packet.get("schema_valid") is not False:
        return []
    return [str(e) for e in packet.get("schema_errors") or []] or ["invalid"]


def tool_result_summary(result: views.ToolResult) -> str:
    """The short text after ✓/✗: the error code and sentence, or the output's first line."""
    if not result.ok:
        code = result.error.code or result.limit_hit or "error"
        message = one_line(result.error.message, 60)
        return f"{code}: {message}" if message else code
    first = one_line(result.output)
    lines = len(result.output.splitlines())
    return f"{first} (+{lines - 1} lines)" if lines > 1 and first else first


@dataclass
class _Tool:
    title: str
    tool: str
    arguments_json: str
    chunk_lines: int = 0
    hidden_lines: int = 0
    partial: str = ""


@dataclass
class _TurnState:
    reasoning_chars: int = 0
    reasoning_text: list[str] = field(default_factory=list)
    reasoning_shown: bool = False
    in_reasoning: bool = False
    tasks: tuple[tuple[str, str], ...] = ()


@dataclass
class LastTool:
    """The last finished tool call, for ``/last`` and Ctrl-Y."""

    tool: str
    title: str
    arguments_json: str
    output: str
    ok: bool


class EventRenderer:
    """Turns ``TurnEvent`` protos into terminal output, one event at a time."""

    def __init__(self, console: Console, verbose: bool = False, line_buffered: bool = False) -> None:
        """``line_buffered``: print assistant text only as whole lines and keep the unfinished
        line in :attr:`partial_text` (the REPL shows it above its input line, where
        prompt_toolkit can redraw it; a half line printed above a live prompt gets erased)."""
        self.console = console
        self.verbose = verbose
        self.line_buffered = line_buffered
        self.partial_text = ""
        self._in_code = False
        self.last_tool: LastTool | None = None
        self.last_reasoning = ""
        self.pending_approval: views.ApprovalRequested | None = None
        self.pending_question: views.QuestionAsked | None = None
        self.last_context: views.ContextAssembled | None = None
        self.last_usage: views.Usage | None = None  # the last finished turn's (for /cost)
        self.last_seq = 0
        self._tools: dict[str, _Tool] = {}
        self._turn = _TurnState()
        self._mid_line = False
        self._last_line_tool = ""
        self.diffs = diffview.DiffLog()

    @property
    def mid_line(self) -> bool:
        """Streamed text left the cursor in the middle of a line."""
        return self._mid_line

    # ---- output primitives ----

    def print(self, text: Text, wrap: bool = True) -> None:
        """Print a line of the client's own (after any half-written text); ``wrap=False`` truncates."""
        if wrap:
            self._end_text()
            self.console.print(text, soft_wrap=True, highlight=False)
            self._last_line_tool = ""
        else:
            self._line(text)

    def _line(self, text: Text) -> None:
        """Print one terminal line; never wraps (a narrow terminal truncates with …). Without a
        terminal (a log, a file) nothing is cut: the line is written whole."""
        self._end_text()
        if self.console.is_terminal:
            self.console.print(text, no_wrap=True, overflow="ellipsis", highlight=False, crop=True)
        else:
            self.console.print(text, soft_wrap=True, highlight=False)
        self._last_line_tool = ""

    def _end_text(self) -> None:
        if self.partial_text:
            styled, _ = markdown_line(self.partial_text, self._in_code)
            self.console.print(styled, soft_wrap=True, highlight=False)
            self.partial_text = ""
        self._in_code = False
        if self._mid_line:
            self.console.print(highlight=False)
            self._mid_line = False
        self._flush_reasoning()

    def _flush_reasoning(self) -> None:
        turn = self._turn
        if turn.in_reasoning:
            turn.in_reasoning = False
            if not turn.reasoning_shown:
                turn.reasoning_shown = True
                self.console.print(
                    literal(f"▸ thinking ({human_count(turn.reasoning_chars)} chars)", "dim"),
                    no_wrap=True, overflow="ellipsis", highlight=False, crop=True)
            if self.verbose:
                self.console.print(literal(turn.reasoning_text[-1], "dim italic"), highlight=False)

    # ---- dispatch ----

    def handle(self, event: views.Event) -> None:
        """Render one event. Unknown or empty events are ignored."""
        self.last_seq = max(self.last_seq, event.seq)
        if event.body is None:
            return
        if event.scope is not None:
            self._on_scoped(event.scope, event.body)
            return
        self._dispatch(event.body)

    def _dispatch(self, body: views.Body) -> None:
        """Each event kind to its handler (every kind named: a new one fails mypy here)."""
        match body:
            case views.TurnStarted():
                self._on_turn_started(body)
            case views.TextDelta():
                self._on_text_delta(body)
            case views.ReasoningDelta():
                self._on_reasoning_delta(body)
            case views.ToolStarted():
                self._on_tool_started(body)
            case views.ToolChunk():
                self._on_tool_chunk(body)
            case views.ToolFinished():
                self._on_tool_finished(body)
            case views.ApprovalRequested():
                self._on_approval_requested(body)
            case views.BackgroundTaskDone():
                self._on_background_task_done(body)
            case views.ApprovalResolved():
                self._on_approval_resolved(body)
            case views.QuestionAsked():
                self._on_question_asked(body)
            case views.QuestionResolved():
                self._on_question_resolved(body)
            case views.TaskListUpdated():
                self._on_task_list_updated(body)
            case views.CompactionStarted():
                self._on_compaction_started(body)
            case views.CompactionEnded():
                self._on_compaction_ended(body)
            case views.MemoryRecalled():
                self._on_memory_recalled(body)
            case views.Degraded():
                self._on_degraded(body)
            case views.SearchStalled():
                self._on_search_stalled(body)
            case views.ContextAssembled():
                self._on_context_assembled(body)
            case views.ModelStepFinished():
                self._on_model_step_finished(body)
            case views.InputQueued():
                self._on_input_queued(body)
            case views.Notice():
                self._on_notice(body)
            case views.HookRun():
                self._on_hook_run(body)
            case views.SkillCatalogChanged():
                self._on_skill_catalog_changed(body)
            case views.AcceptanceChecked():
                self._on_acceptance_checked(body)
            case views.PlanStepStarted():
                self._on_plan_step_started(body)
            case views.PlanStepReceipt():
                self._on_plan_step_receipt(body)
            case views.PlanReport():
                self._on_plan_report(body)
            case views.LedgerUpdated():
                self._on_ledger_updated(body)
            case views.EventsSkipped():
                self._on_events_skipped(body)
            case views.TurnFinished():
                self._on_turn_finished(body)
            case views.SubagentStarted() | views.SubagentFinished():
                pass  # shown only as a child's, under its run's scope (_on_scoped)
            case views.BufferRequested():
                pass  # for an editor client (ai-coding acp) to answer; nothing to show
            case _:
                assert_never(body)

    def close(self) -> None:
        """Finish any half-written line (call when the stream ends)."""
        self._end_text()

    # ---- events ----

    def _on_turn_started(self, ev: views.TurnStarted) -> None:
        self._turn = _TurnState()
        self._tools.clear()
        self.diffs.start_turn()
        if self.verbose:
            self._line(literal(f"turn {ev.turn} · {ev.model}", "dim"))

    def _on_text_delta(self, ev: views.TextDelta) -> None:
        if not ev.text:
            return
        self._flush_reasoning()
        self._last_line_tool = ""
        if self.line_buffered:
            *complete, self.partial_text = (self.partial_text + ev.text).split("\n")
            for line in complete:
                styled, self._in_code = markdown_line(line, self._in_code)
                self.console.print(styled, soft_wrap=True, highlight=False)
            self._spill_long_partial()
            return
        self.console.print(literal(ev.text), end="", soft_wrap=True, highlight=False)
        self._mid_line = not ev.text.endswith("\n")

    def _spill_long_partial(self) -> None:
        """A paragraph with no newline yet would grow the prompt area past the screen: print all of
        it but the last screen row or so, cut at a space, and keep only that tail pending."""
        width = max(20, self.console.width)
        if len(self.partial_text) <= PARTIAL_ROWS_KEPT * width:
            return
        cut = self.partial_text.rfind(" ", 0, len(self.partial_text) - width)
        if cut <= 0:
            cut = len(self.partial_text) - width
        head, self.partial_text = self.partial_text[:cut], self.partial_text[cut:].lstrip(" ")
        styled, _ = markdown_line(head, self._in_code)
        self.console.print(styled, soft_wrap=True, highlight=False)

    def _on_reasoning_delta(self, ev: views.ReasoningDelta) -> None:
        turn = self._turn
        if not turn.in_reasoning:
            self._end_text()
            turn.in_reasoning = True
            turn.reasoning_text.append("")
        turn.reasoning_chars += len(ev.text)
        turn.reasoning_text[-1] += ev.text
        self.last_reasoning = "\n\n".join(turn.reasoning_text)

    def _on_tool_started(self, ev: views.ToolStarted) -> None:
        title = ev.title or tool_title(ev.tool, ev.arguments_json)
        self._tools[ev.call_id] = _Tool(title=title, tool=ev.tool, arguments_json=ev.arguments_json)
        self._line(literal(f"▸ {title}", "yellow"))
        self._last_line_tool = ev.call_id

    def _on_tool_chunk(self, ev: views.ToolChunk) -> None:
        tool = self._tools.get(ev.call_id)
        if tool is None:
            return
        if ev.stream == "progress":
            done = f" {ev.progress:g}/{ev.total:g}" if ev.total else ""
            self._chunk_line(tool, f"{one_line(ev.text)}{done}")
            return
        text = tool.partial + ev.text
        *complete, tool.partial = text.split("\n")
        for line in complete:
            self._chunk_line(tool, line)

    def _chunk_line(self, tool: _Tool, line: str) -> None:
        if tool.chunk_lines >= CHUNK_LINES_SHOWN and not self.verbose:
            tool.hidden_lines += 1
            return
        tool.chunk_lines += 1
        self._line(literal(f"  │ {line}", "dim"))

    def _on_tool_finished(self, ev: views.ToolFinished) -> None:
        result = ev.result
        tool = self._tools.pop(result.call_id, None) or _Tool(
            title=tool_title(result.tool, "{}"), tool=result.tool, arguments_json="{}")
        if tool.partial:
            self._chunk_line(tool, tool.partial)
        if tool.hidden_lines:
            self._line(literal(f"  │ … {tool.hidden_lines} more lines (/last shows all)", "dim"))
        self.last_tool = LastTool(tool=tool.tool, title=tool.title, arguments_json=tool.arguments_json,
                                  output=result.output if result.ok else _failure_text(result), ok=result.ok)
        failed_command = command_failure(result)
        mark, style = ("✓", "green") if result.ok and not failed_command else ("✗", "red")
        summary = failed_command or tool_result_summary(result)
        change = diffview.edit_diff(result.tool, tool.arguments_json, result.ok, result.data_json)
        if change is not None:
            summary = f"{one_line(result.output)} · +{change.added} -{change.removed}"
        text = f"{mark} {tool.title}" + (f" · {summary}" if summary else "")
        text += f" · {human_duration(result.duration_ms)}"
        if self._last_line_tool == result.call_id and self.console.is_terminal:
            # The started line is the last one on screen: turn it into the result in place.
            self.console.file.write("\x1b[1A\x1b[2K\r")
        self._line(literal(text, style))
        if change is not None:
            self.diffs.add(change)
            self.print(diffview.diff_text(change.diff))

    def _on_approval_requested(self, ev: views.ApprovalRequested, label: str = "") -> None:
        self.pending_approval = ev
        self._line(literal(f"? approve {ev.tool}" + (f" for {label}" if label else "")
                           + (f" ({ev.reason})" if ev.reason else ""), "bold magenta"))
        self._end_text()
        self.console.print(preview_text(ev.preview or ev.arguments_json), highlight=False)
        self._line(Text(f"  {approvals.HINT}", style="magenta"))

    # ---- a subagent child's events: nested lines under the subAgent call ----

    def _on_scoped(self, scope: views.SubagentScope, body: views.Body) -> None:
        """A child's event, relayed by its parent: a few of them as indented dim lines; its approvals
        as the ordinary approval prompt, labelled with the child (answering works as for the parent's)."""
        who = scope.name or scope.run_id
        if isinstance(body, views.SubagentStarted):
            mode = "background " if body.background else ""
            self._line(literal(f"  ↳ {mode}subagent {who} [{body.run_id}] · {one_line(body.task, 80)}", "dim"))
        elif isinstance(body, views.ToolFinished):
            result = body.result
            mark = "✓" if result.ok else "✗"
            summary = tool_result_summary(result)
            self._line(literal(f"    {who} {mark} {tool_title(result.tool, '{}')}" + (f" · {summary}" if summary else ""),
                               "dim"))
        elif isinstance(body, views.ApprovalRequested):
            self._on_approval_requested(body, label=f"subagent {who} (task: {one_line(scope.task, 60)})")
        elif isinstance(body, views.ApprovalResolved):
            self._on_approval_resolved(body)
        elif isinstance(body, views.SubagentFinished):
            self._line(literal(f"  ↳ subagent {who} {body.status}" + (f" ({body.exit_reason})" if body.exit_reason
                                                                        else "")
                               + f" · {human_count(body.usage.total_tokens)} tokens · {human_duration(body.elapsed_ms)}",
                               "dim"))
            errors = _schema_errors(body.packet_json)
            if errors:
                self._line(literal(f"  ⚠ subagent {who}: its JSON does not match the output_schema: "
                                   + "; ".join(errors), "yellow"))

    def _on_background_task_done(self, ev: views.BackgroundTaskDone) -> None:
        self._line(literal(background_done_line(ev), "dim"))

    def _on_approval_resolved(self, ev: views.ApprovalResolved) -> None:
        if self.pending_approval and self.pending_approval.request_id == ev.request_id:
            self.pending_approval = None
        source = f" ({ev.source})" if ev.source and ev.source != "user" else ""
        self._line(literal(f"  → {DECISION_NAMES.get(ev.decision, 'denied')}{source}", "dim"))

    def _on_question_asked(self, ev: views.QuestionAsked) -> None:
        self.pending_question = ev
        self._line(literal("◆ Question", "bold cyan"))
        self._end_text()
        self.console.print(literal(ev.question), highlight=False)
        for number, option in enumerate(ev.options, start=1):
            self._line(literal(f"  {number}. {option}"))
        hint = "  type a number or your own answer · Esc answers empty" if ev.options else \
            "  type your answer · Esc answers empty"
        self._line(Text(hint, style="cyan"))

    def _on_question_resolved(self, ev: views.QuestionResolved) -> None:
        if self.pending_question and self.pending_question.request_id == ev.request_id:
            self.pending_question = None
        self._line(literal(f"  → {one_line(ev.answer) or '(no answer)'}", "dim"))

    def _on_task_list_updated(self, ev: views.TaskListUpdated) -> None:
        tasks = tuple((item.content, item.status) for item in ev.items)
        if tasks == self._turn.tasks:
            return
        self._turn.tasks = tasks
        done = sum(1 for _, status in tasks if status == "completed")
        self._line(literal(f"  tasks {done}/{len(tasks)}" + (f" · {one_line(ev.goal, 60)}" if ev.goal else ""),
                           "dim"))
        for content, status in tasks:
            self._line(literal(f"  {_TASK_MARKS.get(status, '·')} {one_line(content)}", "dim"))

    def _on_compaction_started(self, ev: views.CompactionStarted) -> None:
        self._line(literal(f"  compacting ~{human_count(ev.estimated_tokens)} tokens ({ev.reason})", "dim"))

    def _on_compaction_ended(self, ev: views.CompactionEnded) -> None:
        stats = layer_stats(ev)
        self._line(literal(f"  compacted {human_count(ev.estimated_before)} → "
                           f"{human_count(ev.estimated_after)} tokens" + (f" ({stats})" if stats else ""), "dim"))

    def _on_memory_recalled(self, ev: views.MemoryRecalled) -> None:
        if self.verbose and ev.count:
            self._line(literal(f"  recalled {ev.count} notes ({ev.elapsed_ms:.1f}ms)", "dim"))

    def _on_degraded(self, ev: views.Degraded) -> None:
        self._line(literal(f"  degraded · {ev.component}: {one_line(ev.reason, 100)}", "yellow"))

    def _on_search_stalled(self, ev: views.SearchStalled) -> None:
        if self.verbose:
            self._line(literal(f"  search stalled (level {ev.level}): {one_line(ev.reason)}", "dim"))

    def _on_context_assembled(self, ev: views.ContextAssembled) -> None:
        self.last_context = ev
        if self.verbose:
            self._line(literal(f"  context ~{human_count(ev.estimated_tokens)} tokens", "dim"))

    def _on_model_step_finished(self, ev: views.ModelStepFinished) -> None:
        if self.verbose:
            self._line(literal(f"  step {ev.step} · {ev.finish_reason} · {human_duration(ev.latency_ms)}", "dim"))

    def _on_input_queued(self, ev: views.InputQueued) -> None:
        self._line(literal(f"  queued #{ev.position}: {one_line(ev.input, 60)}", "dim"))

    def _on_notice(self, ev: views.Notice) -> None:
        style = {"warning": "yellow", "error": "red"}.get(ev.level, "dim")
        self._line(literal(ev.text, style))

    def _on_hook_run(self, ev: views.HookRun) -> None:
        if ev.outcome in ("blocked", "failed", "timeout"):
            style = "yellow" if ev.outcome != "blocked" else "dim"
            detail = f": {one_line(ev.detail, 100)}" if ev.detail else ""
            self._line(literal(f"  hook {ev.hook} ({ev.point}) {ev.outcome}{detail}", style))
        elif self.verbose:
            self._line(literal(f"  hook {ev.hook} ({ev.point}) {ev.outcome} · {human_duration(ev.duration_ms)}", "dim"))

    def _on_skill_catalog_changed(self, ev: views.SkillCatalogChanged) -> None:
        what = ", ".join([*(f"+{n}" for n in ev.added), *(f"-{n}" for n in ev.removed), *(f"~{n}" for n in ev.changed)])
        self._line(literal(f"  skills changed ({what or 'catalog'}): the system message changes, the prompt cache "
                           "restarts once", "dim"))

    def _on_acceptance_checked(self, ev: views.AcceptanceChecked) -> None:
        self._end_text()
        if ev.passed:
            self._line(literal(f"  [acceptance] ✓ {ev.item_id} {one_line(ev.statement, 60)} · `{one_line(ev.command, 60)}`"
                               f" · {human_duration(ev.duration_ms)}", "green"))
            return
        why = ev.error or f"exit {ev.exit_code}"
        last = next((ln for ln in reversed(ev.output_tail.splitlines()) if ln.strip()), "")
        self._line(literal(f"  [acceptance] ✗ {ev.item_id} {one_line(ev.statement, 60)} · `{one_line(ev.command, 60)}`"
                           f" · {why}" + (f" · {one_line(last, 80)}" if last else ""), "yellow"))

    def _on_plan_step_started(self, ev: views.PlanStepStarted) -> None:
        self._end_text()
        self._line(literal(plan_step_header(ev.index, ev.total, ev.content), "bold"))

    def _on_plan_step_receipt(self, ev: views.PlanStepReceipt) -> None:
        self._end_text()
        self._line(literal(receipt_line(ev), "green" if ev.outcome == "done" else "yellow"))

    def _on_plan_report(self, ev: views.PlanReport) -> None:
        self._end_text()
        self.console.print(literal(ev.text), highlight=False)

    def _on_ledger_updated(self, ev: views.LedgerUpdated) -> None:
        shown = "; ".join(one_line(e, 60) for e in ev.open[:3]) or "nothing open"
        self._line(literal(f"  uncertain: {shown}", "dim"))

    def _on_events_skipped(self, ev: views.EventsSkipped) -> None:
        count = max(ev.to_seq - ev.from_seq + 1, 0)
        noun = "event" if count == 1 else "events"
        self.print(literal(f"  … {count:,} earlier {noun} skipped (no longer held by the loop) · "
                           "the saved session has the full history: /resume", "dim"))

    def _on_turn_finished(self, ev: views.TurnFinished) -> None:
        self._end_text()
        self.pending_approval = None
        self.pending_question = None
        self.last_usage = ev.usage
        if failed_before_work(ev):
            self.print(literal(f"error: {ev.reason}", "red"))  # whole: the reason ends with the fix
            return
        if ev.handoff:
            self.console.print(literal(ev.handoff), highlight=False)
        ok = ev.status == views.TurnStatus.COMPLETED
        limit = 80 if self.console.is_terminal else 10_000
        self._line(literal(f"● {status_line(ev, self.last_context, limit)}", "dim" if ok else "yellow"))


def _failure_text(result: views.ToolResult) -> str:
    parts = [f"error: {result.error.code}: {result.error.message}"]
    if result.error.hint:
        parts.append(f"hint: {result.error.hint}")
    if result.output:
        parts.append(result.output)
    return "\n".join(parts)


def last_tool_text(last: LastTool) -> str:
    """Full arguments and output of a finished tool call (what /last prints and Ctrl-Y copies)."""
    try:
        args = json.dumps(json.loads(last.arguments_json or "{}"), indent=2, ensure_ascii=False)
    except json.JSONDecodeError:
        args = last.arguments_json
    return f"{last.title}\narguments:\n{args}\noutput:\n{last.output}"


def preview_text(preview: str) -> Text:
    """An approval preview, literal; a unified diff gets its +/-/@@ lines coloured, a line
    saying the call will fail is yellow, and the loop's own notes in parentheses are dim."""
    text = literal(preview)
    if "\n@@" not in "\n" + preview:
        return text
    offset = 0
    for line in text.plain.split("\n"):
        style = ("bold yellow" if line.startswith("⚠") else
                 "dim" if line.startswith("(") and line.endswith(")") else
                 "green" if line.startswith("+") and not line.startswith("+++") else
                 "red" if line.startswith("-") and not line.startswith("---") else
                 "cyan" if line.startswith("@@") else "")
        if style:
            text.stylize(style, offset, offset + len(line))
        offset += len(line) + 1
    return text


_INLINE = re.compile(r"(`[^`\n]+`)|(\*\*[^*\n]+\*\*)")


def markdown_line(line: str, in_code: bool) -> tuple[Text, bool]:
    """One finished line of assistant Markdown as styled ``Text`` (never parsed as rich markup).

    Returns the line and whether a fenced code block is open after it. Headings are bold,
    fences and code blocks cyan, ``inline code`` cyan, ``**strong**`` bold; the characters
    themselves are kept as the model wrote them.
    """
    stripped = line.lstrip()
    if stripped.startswith("```"):
        return literal(line, "dim cyan"), not in_code
    if in_code:
        return literal(line, "cyan"), True
    if stripped.startswith("#"):
        return literal(line, "bold"), False
    text = literal(line)
    plain = text.plain
    for match in _INLINE.finditer(plain):
        text.stylize("cyan" if match.group(1) else "bold", match.start(), match.end())
    return text, False
