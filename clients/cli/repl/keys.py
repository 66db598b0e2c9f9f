"""The REPL's keys.

Enter hands lines over; y/a/n/s answer approvals; digits and arrows pick options; Esc cancels
the tool batch (denies a pending approval, answers a question empty), and twice on an idle empty
line opens the /rewind picker; Ctrl-C aborts or exits;
Ctrl-D exits; Ctrl-Y copies the last tool call; Ctrl-O shows the last folded diff whole.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from clients.cli import views
from clients.cli.approvals import ONE_KEYS, approval_decision
from clients.cli.render import last_tool_text
from clients.cli.repl.state import cycle_option, is_answer_tail, osc52

if TYPE_CHECKING:
    from clients.cli.repl.host import KeyHost

UNFOLD_KEY = "Ctrl-O"
"""Shows the last folded diff whole (as Claude Code's ctrl+o expands output); its folded line names it."""


DOUBLE_ESCAPE_SECONDS = 1.5
"""Two Esc presses on an empty line this close open /rewind (a lone Esc takes ~0.5 s to be told
from the start of a key's escape sequence, so the window is wider than a double click's)."""


def build_bindings(repl: KeyHost) -> KeyBindings:
    """Key bindings over ``repl``'s state (filters read it on every key press)."""
    kb = KeyBindings()
    line_empty = Condition(lambda: not repl.prompt.default_buffer.text)
    approving = Condition(lambda: repl.renderer.pending_approval is not None) & line_empty
    options = Condition(lambda: repl.renderer.pending_question is not None
                        and bool(repl.renderer.pending_question.options)) & line_empty

    @kb.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.complete_state is not None and buffer.complete_state.current_completion is not None:
            buffer.apply_completion(buffer.complete_state.current_completion)
            return
        line = buffer.text
        answered = repl.last_answer
        if answered is not None and is_answer_tail(line, answered[0], time.monotonic() - answered[1]):
            buffer.reset()  # "yes" typed at an approval: "y" answered it, "es" is not a message
            repl.last_answer = None
            return
        if line.strip():
            buffer.append_to_history()
        buffer.reset()
        repl.submit_line(line)

    # Registered after the plain Enter: for the same key the binding added last wins.
    for key in (*ONE_KEYS, "enter"):
        @kb.add(key, filter=approving)
        def _approve(event: KeyPressEvent, key: str = key) -> None:
            repl.answer_approval(approval_decision("" if key == "enter" else key))
            repl.last_answer = (key, time.monotonic()) if key != "enter" else None

    for digit in "123456789":
        @kb.add(digit, filter=options)
        def _option(event: KeyPressEvent, digit: str = digit) -> None:
            pending = repl.renderer.pending_question
            if pending is not None and int(digit) <= len(pending.options):
                repl.answer_question(pending.options[int(digit) - 1])

    any_options = Condition(lambda: repl.renderer.pending_question is not None
                            and bool(repl.renderer.pending_question.options))

    @kb.add("up", filter=any_options)
    @kb.add("down", filter=any_options)
    def _cycle(event: KeyPressEvent) -> None:
        pending = repl.renderer.pending_question
        if pending is None:
            return
        step = -1 if event.key_sequence[0].key == "up" else 1
        choice = cycle_option(list(pending.options), event.current_buffer.text, step)
        event.current_buffer.set_document(Document(choice), bypass_readonly=True)

    last_escape = [0.0]

    @kb.add("escape", eager=True)
    def _escape(event: KeyPressEvent) -> None:
        if repl.renderer.pending_question is not None:
            repl.answer_question("")
        elif repl.renderer.pending_approval is not None:
            repl.answer_approval(views.Decision.DENY)
        elif repl.turn_running:
            repl.interrupt(views.Scope.BATCH, "cancelling the running tools…")
        else:
            now, empty = time.monotonic(), not event.current_buffer.text
            event.current_buffer.reset()
            if empty and now - last_escape[0] < DOUBLE_ESCAPE_SECONDS:
                now = 0.0
                repl.submit_line("/rewind")  # a double Esc opens the rewind picker, as in Claude Code
            last_escape[0] = now

    @kb.add("c-c")
    def _ctrl_c(event: KeyPressEvent) -> None:
        repl.press_ctrl_c()

    @kb.add("c-d", filter=line_empty)
    def _ctrl_d(event: KeyPressEvent) -> None:
        event.app.exit(exception=EOFError())

    @kb.add("c-y")
    def _ctrl_y(event: KeyPressEvent) -> None:
        last = repl.renderer.last_tool
        if last is None:
            repl.note("nothing to copy yet: no tool call has finished")
            return
        text = last_tool_text(last)
        event.app.output.write_raw(osc52(text))
        event.app.output.flush()
        repl.note(f"copied the last tool call ({len(text)} chars) to the clipboard")

    @kb.add("c-o")
    def _ctrl_o(event: KeyPressEvent) -> None:
        repl.unfold_diff()

    return kb
