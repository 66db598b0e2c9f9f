"""The turn's work as the model tracks it: the task list, plan steps and their receipts, acceptance
checks, the uncertainty ledger."""

from __future__ import annotations

from clients.cli import views
from clients.cli.render.screen import Screen
from clients.cli.render.text import human_duration, one_line, plan_step_header, receipt_line
from clients.cli.textsafe import literal

_TASK_MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☑", "blocked": "⊘", "dropped": "✗"}


class WorkLines:
    """Tasks (redrawn only when they change), plan steps, acceptance, the ledger."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self._tasks: tuple[tuple[str, str], ...] = ()

    def new_turn(self) -> None:
        """A turn starts: its first task list is drawn whatever the last turn's was."""
        self._tasks = ()

    def task_list_updated(self, ev: views.TaskListUpdated) -> None:
        """'  tasks 1/3 · goal' and one line per task."""
        tasks = tuple((item.content, item.status) for item in ev.items)
        if tasks == self._tasks:
            return
        self._tasks = tasks
        done = sum(1 for _, status in tasks if status == "completed")
        self.screen.line(literal(f"  tasks {done}/{len(tasks)}" + (f" · {one_line(ev.goal, 60)}" if ev.goal else ""),
                                 "dim"))
        for content, status in tasks:
            self.screen.line(literal(f"  {_TASK_MARKS.get(status, '·')} {one_line(content)}", "dim"))

    def acceptance_checked(self, ev: views.AcceptanceChecked) -> None:
        """'  [acceptance] ✓ item statement · `command` · 1.2s' (✗ with why and the last output line)."""
        self.screen.end_text()
        if ev.passed:
            self.screen.line(literal(f"  [acceptance] ✓ {ev.item_id} {one_line(ev.statement, 60)} · "
                                     f"`{one_line(ev.command, 60)}` · {human_duration(ev.duration_ms)}", "green"))
            return
        why = ev.error or f"exit {ev.exit_code}"
        last = next((ln for ln in reversed(ev.output_tail.splitlines()) if ln.strip()), "")
        self.screen.line(literal(f"  [acceptance] ✗ {ev.item_id} {one_line(ev.statement, 60)} · "
                                 f"`{one_line(ev.command, 60)}` · {why}" + (f" · {one_line(last, 80)}" if last else ""),
                                 "yellow"))

    def plan_step_started(self, ev: views.PlanStepStarted) -> None:
        """'[plan] step 2/3: content'."""
        self.screen.end_text()
        self.screen.line(literal(plan_step_header(ev.index, ev.total, ev.content), "bold"))

    def plan_step_receipt(self, ev: views.PlanStepReceipt) -> None:
        """The step's receipt line (green when done)."""
        self.screen.end_text()
        self.screen.line(literal(receipt_line(ev), "green" if ev.outcome == "done" else "yellow"))

    def plan_report(self, ev: views.PlanReport) -> None:
        """The plan's closing report, whole."""
        self.screen.block(literal(ev.text))

    def ledger_updated(self, ev: views.LedgerUpdated) -> None:
        """'  uncertain: a; b; c'."""
        shown = "; ".join(one_line(e, 60) for e in ev.open[:3]) or "nothing open"
        self.screen.line(literal(f"  uncertain: {shown}", "dim"))
