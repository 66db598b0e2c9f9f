"""A plan step's turn context: ephemeral, seeded, never saved, never listed by /resume.

``step_context`` is the parent session's ``ports.TurnContext`` with a few fields replaced. A
step shares the parent session's workspace, model, tools (todo_write on the parent's task list:
the plan's state is one list), permission gate, tools-service session and hooks' tool and step
points; it has its own history (the seed only: the spec measured 41k/82k/130k/254k prompts when
each step re-sent the history), its own context keeper, its item's ``verify`` as acceptance, and
``open_tasks`` narrowed to its item, so the one continuation a step gets names that item only.
Its turn start and end are the plan's, not the client's: they are not relayed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from services.loop.compaction.keeper import ContextKeeper
from services.loop.compaction.settings import CompactionSettings
from services.loop.core.acceptance import FixedAcceptance
from services.loop.core.ports import TurnContext, nothing
from services.loop.core.tasks import TaskState
from services.loop.core.turn_events import EventBody, TurnFinished, TurnStarted
from services.loop.policy.settings import LoopSettings
from services.loop.subagents.child import ChildHooks


def step_context(parent: TurnContext, settings: LoopSettings, compaction: CompactionSettings, *, item_id: str,
                 acceptance: FixedAcceptance, task_state: Callable[[], TaskState], turn: int, label: str
                 ) -> TurnContext:
    """The context of one planning or step turn (``turn``: the plan run's number) over ``parent``."""

    def relay(_: int, body: EventBody) -> None:
        if not isinstance(body, TurnStarted | TurnFinished):
            parent.emit(turn, body)

    def open_tasks() -> list[str]:
        """Only this step's item (a planning turn has none): the continuation is narrowed to it."""
        return [i.content for i in task_state().open_items() if i.id == item_id]

    return dataclasses.replace(
        parent, settings=settings, messages=[],
        context=ContextKeeper.create(compaction, parent.model, f"{parent.session_id}-{label}", parent.workspace, {}),
        hooks=ChildHooks(parent.hooks), acceptance=acceptance, emit=relay, open_tasks=open_tasks,
        save=nothing, end_of_turn=nothing)  # the plan's receipts and task list are saved with the parent
