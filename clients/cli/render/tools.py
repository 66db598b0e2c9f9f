"""Tool calls on screen: the started line, a running command's output lines, the result line, and a
write's or edit's diff under it (folded past a height)."""

from __future__ import annotations

from dataclasses import dataclass

from clients.cli import diffview, views
from clients.cli.render.screen import Screen
from clients.cli.render.text import (
    LastTool,
    command_failure,
    failure_text,
    human_duration,
    one_line,
    tool_result_summary,
)
from clients.cli.textsafe import literal
from services.kernel.titles import tool_title

# How many lines of a running command's output show under its tool line.
CHUNK_LINES_SHOWN = 6


@dataclass
class _Call:
    title: str
    tool: str
    arguments_json: str
    chunk_lines: int = 0
    hidden_lines: int = 0
    partial: str = ""


class ToolLines:
    """The calls of the turn; the last finished one (``/last``, Ctrl-Y) and the diffs (``/diff``)."""

    def __init__(self, screen: Screen, fold_hint: str = diffview.SHOWN_ALL) -> None:
        self.screen = screen
        self.fold_hint = fold_hint
        self.last_tool: LastTool | None = None
        self.diffs = diffview.DiffLog()
        self._calls: dict[str, _Call] = {}

    def new_turn(self) -> None:
        """A turn starts: no call of the last one is still drawn."""
        self._calls.clear()
        self.diffs.start_turn()

    def started(self, ev: views.ToolStarted) -> None:
        """'▸ Editing · calc.py'."""
        title = ev.title or tool_title(ev.tool, ev.arguments_json)
        self._calls[ev.call_id] = _Call(title=title, tool=ev.tool, arguments_json=ev.arguments_json)
        self.screen.call_line(ev.call_id, literal(f"▸ {title}", "yellow"))

    def chunk(self, ev: views.ToolChunk) -> None:
        """A running call's output (whole lines) or progress."""
        call = self._calls.get(ev.call_id)
        if call is None:
            return
        if ev.stream == "progress":
            done = f" {ev.progress:g}/{ev.total:g}" if ev.total else ""
            self._chunk_line(call, f"{one_line(ev.text)}{done}")
            return
        text = call.partial + ev.text
        *complete, call.partial = text.split("\n")
        for line in complete:
            self._chunk_line(call, line)

    def _chunk_line(self, call: _Call, line: str) -> None:
        if call.chunk_lines >= CHUNK_LINES_SHOWN and not self.screen.verbose:
            call.hidden_lines += 1
            return
        call.chunk_lines += 1
        self.screen.line(literal(f"  │ {line}", "dim"))

    def finished(self, ev: views.ToolFinished) -> None:
        """'✓ Editing · calc.py · Edited calc.py: 1 replacement. · +1 -1 · 12ms' and the diff under it."""
        result = ev.result
        call = self._calls.pop(result.call_id, None) or _Call(
            title=tool_title(result.tool, "{}"), tool=result.tool, arguments_json="{}")
        if call.partial:
            self._chunk_line(call, call.partial)
        if call.hidden_lines:
            self.screen.line(literal(f"  │ … {call.hidden_lines} more lines (/last shows all)", "dim"))
        self.last_tool = LastTool(tool=call.tool, title=call.title, arguments_json=call.arguments_json,
                                  output=result.output if result.ok else failure_text(result), ok=result.ok)
        failed_command = command_failure(result)
        mark, style = ("✓", "green") if result.ok and not failed_command else ("✗", "red")
        summary = failed_command or tool_result_summary(result)
        change = diffview.edit_diff(result.tool, call.arguments_json, result.ok, result.data_json)
        if change is not None:
            summary = f"{one_line(result.output)} · +{change.added} -{change.removed}"
        text = f"{mark} {call.title}" + (f" · {summary}" if summary else "")
        text += f" · {human_duration(result.duration_ms)}"
        self.screen.replace_call_line(result.call_id, literal(text, style))
        if change is not None:
            self.diffs.add(change)
            self.screen.print(diffview.diff_text(change.diff, hint=self.fold_hint))
