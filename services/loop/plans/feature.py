"""Plans and the acceptance gate as a session feature: the acceptance items (the turn's acceptance
source), ``acceptance_propose``, /accept, and /plan runs queued as the session's turns."""

from __future__ import annotations

from typing import Any

from services.loop.compaction.feature import CompactionFeature
from services.loop.core import limits
from services.loop.core.acceptance import AcceptanceItem
from services.loop.core.errors import BadRequest
from services.loop.core.feature import Command, Feature, FeatureHost, StateSlot
from services.loop.core.ports import ToolDef
from services.loop.plans.acceptance import ACCEPTANCE, AcceptanceBook, ProposeTool, config_items
from services.loop.plans.command import accept_command
from services.loop.plans.receipts import PLAN
from services.loop.plans.runner import PlanContext, PlanRunner, refuse_topic


class PlansFeature(Feature):
    """The session's acceptance book (saved as ``acceptance``) and its /plan runs."""

    name = "plans"
    slots: tuple[StateSlot[Any], ...] = (ACCEPTANCE, PLAN)

    def __init__(self, host: FeatureHost) -> None:
        super().__init__()
        self.host = host
        self.book = AcceptanceBook(lambda: ACCEPTANCE.read(self.host.session), self._store,
                                   config_items(host.deps.plans.acceptance, host.session.workspace))
        self.acceptance = self.book

    def _store(self, items: list[AcceptanceItem]) -> None:
        ACCEPTANCE.write(self.host.session, items)

    def tools(self) -> list[ToolDef]:
        return [ProposeTool(self.book).tool_def()]

    def commands(self) -> dict[str, Command]:
        async def accept(args: str) -> tuple[str, str]:
            return accept_command(self.book, args)

        return {"accept": accept}

    def submit(self, topic: str) -> None:
        """Run ``/plan <topic>`` now, or queue it; a topic naming paths outside the workspace is refused
        before anything runs (no model call)."""
        topic = " ".join(topic.split())
        if not topic:
            raise BadRequest("/plan needs a topic", hint="What should I plan? Send /plan <topic>.")
        limits.check_prompt(topic)
        outside = refuse_topic(topic, self.host.session.workspace)
        if outside:
            raise BadRequest(f"the plan topic names paths outside the workspace: {', '.join(outside)}",
                             hint="Plan work inside the workspace, or open the other directory as its own workspace.",
                             reason="plan_outside_workspace")

        async def run(number: int) -> None:
            self.host.tools.load(["checkpoint_write"])  # each step leaves its progress line with it
            await PlanRunner(self._context(), topic, number).run()

        self.host.enqueue(f"/plan {topic}", run)

    def _context(self) -> PlanContext:
        host = self.host
        compaction = host.feature(CompactionFeature)

        def take_note() -> str:
            if compaction is None:
                return ""
            note, compaction.keeper.note = compaction.keeper.note, ""
            return note

        return PlanContext(host.turn_context(), host.session, host.deps.compaction, host.set_turn, host.save, take_note)


def submit_plan(host: FeatureHost, topic: str) -> None:
    """``/plan <topic>`` on a session (its plans feature must be composed in)."""
    feature = host.feature(PlansFeature)
    if feature is None:
        raise BadRequest("/plan is not available in this session", hint="Run the task as a plain turn.")
    feature.submit(topic)
