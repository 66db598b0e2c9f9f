"""The event renderer: one exhaustive match over the closed union of turn event bodies, each kind
handed to the renderer of its family (tools, asks, children, work, context) or drawn here (the
turn's start and end)."""

from __future__ import annotations

from typing import assert_never

from rich.console import Console
from rich.text import Text

from clients.cli import diffview, views
from clients.cli.render.asks import AskLines
from clients.cli.render.children import ChildLines
from clients.cli.render.context import ContextLines
from clients.cli.render.screen import Screen
from clients.cli.render.text import LastTool, failed_before_work, status_line
from clients.cli.render.tools import ToolLines
from clients.cli.render.work import WorkLines
from clients.cli.textsafe import literal


class EventRenderer:
    """Turns turn events into terminal output, one event at a time."""

    def __init__(self, console: Console, verbose: bool = False, line_buffered: bool = False,
                 fold_hint: str = diffview.SHOWN_ALL) -> None:
        """``line_buffered``: assistant text only as whole lines, the unfinished one kept in
        :attr:`partial_text` (the REPL shows it inside its prompt); ``fold_hint``: what a folded
        diff's last line says shows the rest (the REPL names its unfold key, ``run`` the REPL)."""
        self.screen = Screen(console, verbose, line_buffered)
        self.tools = ToolLines(self.screen, fold_hint)
        self.asks = AskLines(self.screen)
        self.children = ChildLines(self.screen, self.asks)
        self.work = WorkLines(self.screen)
        self.context = ContextLines(self.screen)
        self.last_usage: views.Usage | None = None  # the last finished turn's (for /cost)
        self.last_seq = 0

    # ---- what the REPL reads and answers ----

    @property
    def console(self) -> Console:
        """Where everything is printed."""
        return self.screen.console

    @console.setter
    def console(self, console: Console) -> None:
        self.screen.console = console

    @property
    def partial_text(self) -> str:
        """The unfinished line of assistant text (line-buffered mode)."""
        return self.screen.partial_text

    @property
    def mid_line(self) -> bool:
        """Streamed text left the cursor in the middle of a line."""
        return self.screen.mid_line

    @property
    def last_reasoning(self) -> str:
        """The last turn's reasoning, whole (``/thinking``)."""
        return self.screen.last_reasoning

    @property
    def last_tool(self) -> LastTool | None:
        """The last finished tool call (``/last``, Ctrl-Y)."""
        return self.tools.last_tool

    @property
    def diffs(self) -> diffview.DiffLog:
        """The turn's and the session's write/edit diffs (``/diff``)."""
        return self.tools.diffs

    @property
    def last_context(self) -> views.ContextAssembled | None:
        """The last step's context figures (the footer's window fill)."""
        return self.context.last_context

    @property
    def pending_approval(self) -> views.ApprovalRequested | None:
        """The approval waiting for an answer."""
        return self.asks.pending_approval

    @pending_approval.setter
    def pending_approval(self, value: views.ApprovalRequested | None) -> None:
        self.asks.pending_approval = value

    @property
    def pending_question(self) -> views.QuestionAsked | None:
        """The ask_user question waiting for an answer."""
        return self.asks.pending_question

    @pending_question.setter
    def pending_question(self, value: views.QuestionAsked | None) -> None:
        self.asks.pending_question = value

    def new_session(self, changes: list[diffview.FileDiff]) -> None:
        """Another session is shown: its diffs are ``changes`` (its record's), none of this turn yet."""
        self.tools.diffs = diffview.DiffLog(session=list(changes))

    def print(self, text: Text, wrap: bool = True) -> None:
        """Print a line of the client's own (after any half-written text); ``wrap=False`` truncates."""
        self.screen.print(text, wrap)

    def close(self) -> None:
        """Finish any half-written line (call when the stream ends)."""
        self.screen.end_text()

    # ---- dispatch ----

    def handle(self, event: views.Event) -> None:
        """Render one event. Unknown or empty events are ignored."""
        self.last_seq = max(self.last_seq, event.seq)
        if event.body is None:
            return
        if event.scope is not None:
            self.children.scoped(event.scope, event.body)
            return
        self._dispatch(event.body)

    def _dispatch(self, body: views.Body) -> None:
        """Each event kind to its renderer (every kind named: a new one fails mypy here)."""
        match body:
            case views.TurnStarted():
                self._turn_started(body)
            case views.TextDelta():
                self.screen.text_delta(body)
            case views.ReasoningDelta():
                self.screen.reasoning_delta(body)
            case views.ToolStarted():
                self.tools.started(body)
            case views.ToolChunk():
                self.tools.chunk(body)
            case views.ToolFinished():
                self.tools.finished(body)
            case views.ApprovalRequested():
                self.asks.approval_requested(body)
            case views.ApprovalResolved():
                self.asks.approval_resolved(body)
            case views.QuestionAsked():
                self.asks.question_asked(body)
            case views.QuestionResolved():
                self.asks.question_resolved(body)
            case views.BackgroundTaskDone():
                self.children.background_done(body)
            case views.TaskListUpdated():
                self.work.task_list_updated(body)
            case views.AcceptanceChecked():
                self.work.acceptance_checked(body)
            case views.PlanStepStarted():
                self.work.plan_step_started(body)
            case views.PlanStepReceipt():
                self.work.plan_step_receipt(body)
            case views.PlanReport():
                self.work.plan_report(body)
            case views.LedgerUpdated():
                self.work.ledger_updated(body)
            case views.CompactionStarted():
                self.context.compaction_started(body)
            case views.CompactionEnded():
                self.context.compaction_ended(body)
            case views.MemoryRecalled():
                self.context.memory_recalled(body)
            case views.Degraded():
                self.context.degraded(body)
            case views.SearchStalled():
                self.context.search_stalled(body)
            case views.ContextAssembled():
                self.context.context_assembled(body)
            case views.ModelStepFinished():
                self.context.model_step_finished(body)
            case views.InputQueued():
                self.context.input_queued(body)
            case views.Notice():
                self.context.notice(body)
            case views.HookRun():
                self.context.hook_run(body)
            case views.SkillCatalogChanged():
                self.context.skill_catalog_changed(body)
            case views.EventsSkipped():
                self.context.events_skipped(body)
            case views.TurnFinished():
                self._turn_finished(body)
            case views.SubagentStarted() | views.SubagentFinished():
                pass  # shown only as a child's, under its run's scope (ChildLines.scoped)
            case views.BufferRequested():
                pass  # for an editor client (ai-coding acp) to answer; nothing to show
            case _:
                assert_never(body)

    # ---- the turn's start and end ----

    def _turn_started(self, ev: views.TurnStarted) -> None:
        self.screen.new_turn()
        self.tools.new_turn()
        self.work.new_turn()
        if self.screen.verbose:
            self.screen.line(literal(f"turn {ev.turn} · {ev.model}", "dim"))

    def _turn_finished(self, ev: views.TurnFinished) -> None:
        screen = self.screen
        screen.end_text()
        self.asks.clear()
        self.last_usage = ev.usage
        if failed_before_work(ev):
            screen.print(literal(f"error: {ev.reason}", "red"))  # whole: the reason ends with the fix
            return
        if ev.handoff:
            screen.block(literal(ev.handoff))
        ok = ev.status == views.TurnStatus.COMPLETED
        limit = 80 if screen.console.is_terminal else 10_000
        screen.line(literal(f"● {status_line(ev, self.last_context, limit)}", "dim" if ok else "yellow"))
