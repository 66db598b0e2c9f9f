"""Where every event renderer writes: the console's line primitives and the assistant's streamed text.

The text boundary: every string that comes from outside (model text, tool output, arguments,
titles, previews, user input) reaches the console only as a ``rich.text.Text`` built by
``literal``, never as a ``str`` that rich would parse as markup, and with terminal control
characters made visible.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text

from clients.cli import views
from clients.cli.cost import human_count
from clients.cli.render.text import markdown_line
from clients.cli.textsafe import literal

# In line-buffered mode, at most this many screen rows of an unfinished line stay pending.
PARTIAL_ROWS_KEPT = 3


@dataclass
class _Reasoning:
    """The turn's reasoning: shown once as a folded "▸ thinking" line (whole with ``verbose``)."""

    chars: int = 0
    parts: list[str] = field(default_factory=list)
    shown: bool = False
    streaming: bool = False


class Screen:
    """The console, the unfinished line of assistant text, and the turn's folded reasoning."""

    def __init__(self, console: Console, verbose: bool = False, line_buffered: bool = False) -> None:
        """``line_buffered``: print assistant text only as whole lines and keep the unfinished
        line in :attr:`partial_text` (the REPL shows it above its input line, where
        prompt_toolkit can redraw it; a half line printed above a live prompt gets erased)."""
        self.console = console
        self.verbose = verbose
        self.line_buffered = line_buffered
        self.partial_text = ""
        self.last_reasoning = ""
        self.mid_line = False
        """Streamed text left the cursor in the middle of a line."""
        self._in_code = False
        self._reasoning = _Reasoning()
        self._last_line_call = ""

    # ---- lines ----

    def print(self, text: Text, wrap: bool = True) -> None:
        """Print a line of the client's own (after any half-written text); ``wrap=False`` truncates."""
        if wrap:
            self.end_text()
            self.console.print(text, soft_wrap=True, highlight=False)
            self._last_line_call = ""
        else:
            self.line(text)

    def line(self, text: Text) -> None:
        """Print one terminal line; never wraps (a narrow terminal truncates with …). Without a
        terminal (a log, a file) nothing is cut: the line is written whole."""
        self.end_text()
        if self.console.is_terminal:
            self.console.print(text, no_wrap=True, overflow="ellipsis", highlight=False, crop=True)
        else:
            self.console.print(text, soft_wrap=True, highlight=False)
        self._last_line_call = ""

    def block(self, text: Text) -> None:
        """Print ``text`` as it is (several lines, wrapped), after any half-written text."""
        self.end_text()
        self.console.print(text, highlight=False)

    def call_line(self, call_id: str, text: Text) -> None:
        """A call's started line, which its result may replace in place while it is the last one."""
        self.line(text)
        self._last_line_call = call_id

    def replace_call_line(self, call_id: str, text: Text) -> None:
        """Print a call's result line; on a terminal, over its started line when nothing came between."""
        if self._last_line_call == call_id and self.console.is_terminal:
            self.console.file.write("\x1b[1A\x1b[2K\r")
        self.line(text)

    def end_text(self) -> None:
        """Finish the half-written line of assistant text (and the reasoning's one line)."""
        if self.partial_text:
            styled, _ = markdown_line(self.partial_text, self._in_code)
            self.console.print(styled, soft_wrap=True, highlight=False)
            self.partial_text = ""
        self._in_code = False
        if self.mid_line:
            self.console.print(highlight=False)
            self.mid_line = False
        self._flush_reasoning()

    # ---- the assistant's stream ----

    def new_turn(self) -> None:
        """A turn starts: its reasoning is its own."""
        self._reasoning = _Reasoning()

    def text_delta(self, ev: views.TextDelta) -> None:
        """Assistant text: printed as it comes (line-buffered: whole lines, the rest pending)."""
        if not ev.text:
            return
        self._flush_reasoning()
        self._last_line_call = ""
        if self.line_buffered:
            *complete, self.partial_text = (self.partial_text + ev.text).split("\n")
            for line in complete:
                styled, self._in_code = markdown_line(line, self._in_code)
                self.console.print(styled, soft_wrap=True, highlight=False)
            self._spill_long_partial()
            return
        self.console.print(literal(ev.text), end="", soft_wrap=True, highlight=False)
        self.mid_line = not ev.text.endswith("\n")

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

    def reasoning_delta(self, ev: views.ReasoningDelta) -> None:
        """Reasoning text: counted now, shown folded when the next thing is printed."""
        reasoning = self._reasoning
        if not reasoning.streaming:
            self.end_text()
            reasoning.streaming = True
            reasoning.parts.append("")
        reasoning.chars += len(ev.text)
        reasoning.parts[-1] += ev.text
        self.last_reasoning = "\n\n".join(reasoning.parts)

    def _flush_reasoning(self) -> None:
        reasoning = self._reasoning
        if reasoning.streaming:
            reasoning.streaming = False
            if not reasoning.shown:
                reasoning.shown = True
                self.console.print(
                    literal(f"▸ thinking ({human_count(reasoning.chars)} chars)", "dim"),
                    no_wrap=True, overflow="ellipsis", highlight=False, crop=True)
            if self.verbose:
                self.console.print(literal(reasoning.parts[-1], "dim italic"), highlight=False)
