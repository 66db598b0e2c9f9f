"""The text of turn events as plain functions: one-line summaries, the footer, receipts, previews
and the assistant's Markdown lines (no console, no state; the renderers and /resume use them)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from rich.text import Text

from clients.cli import cost, views
from clients.cli.cost import human_count
from clients.cli.textsafe import literal

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


def schema_errors(packet_json: str) -> list[str]:
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
class LastTool:
    """The last finished tool call, for ``/last`` and Ctrl-Y."""

    tool: str
    title: str
    arguments_json: str
    output: str
    ok: bool


def failure_text(result: views.ToolResult) -> str:
    """A failed call's error, hint and output (what /last shows of it)."""
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
