"""What waits for the user: an approval prompt with its preview, an ask_user question, and their answers."""

from __future__ import annotations

from rich.text import Text

from clients.cli import approvals, views
from clients.cli.render.screen import Screen
from clients.cli.render.text import DECISION_NAMES, one_line, preview_text
from clients.cli.textsafe import literal


class AskLines:
    """The pending approval and question (the REPL answers them; a resolution clears them)."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self.pending_approval: views.ApprovalRequested | None = None
        self.pending_question: views.QuestionAsked | None = None

    def clear(self) -> None:
        """The turn ended: nothing waits any more."""
        self.pending_approval = None
        self.pending_question = None

    def approval_requested(self, ev: views.ApprovalRequested, label: str = "") -> None:
        """'? approve bash (reason)', the preview, the keys (``label``: whose call, for a child's)."""
        self.pending_approval = ev
        self.screen.line(literal(f"? approve {ev.tool}" + (f" for {label}" if label else "")
                                 + (f" ({ev.reason})" if ev.reason else ""), "bold magenta"))
        self.screen.block(preview_text(ev.preview or ev.arguments_json))
        self.screen.line(Text(f"  {approvals.HINT}", style="magenta"))

    def approval_resolved(self, ev: views.ApprovalResolved) -> None:
        """'  → allowed once (source)'."""
        if self.pending_approval and self.pending_approval.request_id == ev.request_id:
            self.pending_approval = None
        source = f" ({ev.source})" if ev.source and ev.source != "user" else ""
        self.screen.line(literal(f"  → {DECISION_NAMES.get(ev.decision, 'denied')}{source}", "dim"))

    def question_asked(self, ev: views.QuestionAsked) -> None:
        """'◆ Question', the question, its numbered options and how to answer."""
        self.pending_question = ev
        self.screen.line(literal("◆ Question", "bold cyan"))
        self.screen.block(literal(ev.question))
        for number, option in enumerate(ev.options, start=1):
            self.screen.line(literal(f"  {number}. {option}"))
        hint = "  type a number or your own answer · Esc answers empty" if ev.options else \
            "  type your answer · Esc answers empty"
        self.screen.line(Text(hint, style="cyan"))

    def question_resolved(self, ev: views.QuestionResolved) -> None:
        """'  → the answer'."""
        if self.pending_question and self.pending_question.request_id == ev.request_id:
            self.pending_question = None
        self.screen.line(literal(f"  → {one_line(ev.answer) or '(no answer)'}", "dim"))
