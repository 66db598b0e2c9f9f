"""What the session itself reports during a turn: the context window and its compaction, recalled
memory, model steps, queued input, notices, degradations, hooks, the skill catalog, skipped events."""

from __future__ import annotations

from clients.cli import views
from clients.cli.cost import human_count
from clients.cli.render.screen import Screen
from clients.cli.render.text import human_duration, layer_stats, one_line
from clients.cli.textsafe import literal


class ContextLines:
    """Mostly dim one-liners; several only with ``verbose``. Keeps the last context (the footer's fill)."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self.last_context: views.ContextAssembled | None = None

    def _dim(self, text: str) -> None:
        self.screen.line(literal(text, "dim"))

    def compaction_started(self, ev: views.CompactionStarted) -> None:
        self._dim(f"  compacting ~{human_count(ev.estimated_tokens)} tokens ({ev.reason})")

    def compaction_ended(self, ev: views.CompactionEnded) -> None:
        stats = layer_stats(ev)
        self._dim(f"  compacted {human_count(ev.estimated_before)} → {human_count(ev.estimated_after)} tokens"
                  + (f" ({stats})" if stats else ""))

    def memory_recalled(self, ev: views.MemoryRecalled) -> None:
        if self.screen.verbose and ev.count:
            self._dim(f"  recalled {ev.count} notes ({ev.elapsed_ms:.1f}ms)")

    def degraded(self, ev: views.Degraded) -> None:
        self.screen.line(literal(f"  degraded · {ev.component}: {one_line(ev.reason, 100)}", "yellow"))

    def search_stalled(self, ev: views.SearchStalled) -> None:
        if self.screen.verbose:
            self._dim(f"  search stalled (level {ev.level}): {one_line(ev.reason)}")

    def context_assembled(self, ev: views.ContextAssembled) -> None:
        self.last_context = ev
        if self.screen.verbose:
            self._dim(f"  context ~{human_count(ev.estimated_tokens)} tokens")

    def model_step_finished(self, ev: views.ModelStepFinished) -> None:
        if self.screen.verbose:
            self._dim(f"  step {ev.step} · {ev.finish_reason} · {human_duration(ev.latency_ms)}")

    def input_queued(self, ev: views.InputQueued) -> None:
        self._dim(f"  queued #{ev.position}: {one_line(ev.input, 60)}")

    def notice(self, ev: views.Notice) -> None:
        style = {"warning": "yellow", "error": "red"}.get(ev.level, "dim")
        self.screen.line(literal(ev.text, style))

    def hook_run(self, ev: views.HookRun) -> None:
        if ev.outcome in ("blocked", "failed", "timeout"):
            style = "yellow" if ev.outcome != "blocked" else "dim"
            detail = f": {one_line(ev.detail, 100)}" if ev.detail else ""
            self.screen.line(literal(f"  hook {ev.hook} ({ev.point}) {ev.outcome}{detail}", style))
        elif self.screen.verbose:
            self._dim(f"  hook {ev.hook} ({ev.point}) {ev.outcome} · {human_duration(ev.duration_ms)}")

    def skill_catalog_changed(self, ev: views.SkillCatalogChanged) -> None:
        what = ", ".join([*(f"+{n}" for n in ev.added), *(f"-{n}" for n in ev.removed), *(f"~{n}" for n in ev.changed)])
        self._dim(f"  skills changed ({what or 'catalog'}): the system message changes, the prompt cache restarts once")

    def events_skipped(self, ev: views.EventsSkipped) -> None:
        count = max(ev.to_seq - ev.from_seq + 1, 0)
        noun = "event" if count == 1 else "events"
        self.screen.print(literal(f"  … {count:,} earlier {noun} skipped (no longer held by the loop) · "
                                  "the saved session has the full history: /resume", "dim"))
