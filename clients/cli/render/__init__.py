"""Render the loop's turn events to a terminal (used by ``ai-coding run`` and the REPL).

:mod:`.renderer` matches every event kind and hands it to the renderer of its family:
:mod:`.tools` (calls, their output and diffs), :mod:`.asks` (approvals, questions),
:mod:`.children` (subagent runs), :mod:`.work` (tasks, plans, acceptance, the ledger),
:mod:`.context` (the window, compaction, notices, hooks); :mod:`.screen` is where they all
write, :mod:`.text` the plain functions that word an event.

The text boundary: every string that comes from outside (model text, tool output, arguments,
titles, previews, user input) reaches the console only as a ``rich.text.Text`` built by
``literal``, never as a ``str`` that rich would parse as markup, and with terminal control
characters made visible. So ``[bold]``, ``[/x]``, ``[path=/tmp/x]`` and ``ESC [31m`` / OSC
sequences print as the characters they are.
"""

from clients.cli.render.renderer import EventRenderer
from clients.cli.render.text import (
    LastTool,
    background_done_line,
    last_tool_text,
    layer_stats,
    markdown_line,
    one_line,
    plan_step_header,
    preview_text,
    receipt_line,
    status_line,
    window_fill,
)

__all__ = ["EventRenderer", "LastTool", "background_done_line", "last_tool_text", "layer_stats", "markdown_line",
           "one_line", "plan_step_header", "preview_text", "receipt_line", "status_line", "window_fill"]
