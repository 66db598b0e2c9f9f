"""A plan step's session: ephemeral, seeded, never saved, never listed by /resume.

``StepHost`` is the ``ports.TurnHost`` of one planning or step turn. It shares the parent
session's workspace, model, tools (todo_write on the parent's task list: the plan's state
is one list), permission gate, tools-service session and hooks' tool and step points; it
has its own history (the seed only: the spec measured 41k/82k/130k/254k prompts when each
step re-sent the history), its own context keeper, its item's ``verify`` as acceptance, and
``open_tasks`` narrowed to its item, so the one continuation a step gets names that item
only. Its turn start and end are the plan's, not the client's: they are not relayed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.loop.compaction.keeper import ContextKeeper
from services.loop.compaction.settings import CompactionSettings
from services.loop.core.acceptance import FixedAcceptance
from services.loop.core.ports import (
    McpClient,
    MemoryClient,
    Message,
    ModelClient,
    ToolDef,
    ToolIndex,
    ToolRunner,
    TurnHooks,
    TurnHost,
    Usage,
)
from services.loop.core.tasks import TaskState
from services.loop.core.turn_events import EventBody
from services.loop.policy.permissions import Verdict
from services.loop.policy.settings import LoopSettings
from services.loop.subagents.child import ChildHooks

NOT_RELAYED = frozenset({"turn_started", "turn_finished"})


class StepHost:
    """The host of one planning or step turn over its parent session."""

    def __init__(self, parent: TurnHost, settings: LoopSettings, compaction: CompactionSettings, *,
                 item_id: str, acceptance: FixedAcceptance, task_state: Callable[[], TaskState], turn: int,
                 label: str) -> None:
        self.parent = parent
        self._settings = settings
        self.item_id = item_id
        self._acceptance = acceptance
        self._task_state = task_state
        self._turn = turn
        self._messages: list[Message] = []
        self._context = ContextKeeper.create(compaction, parent.model, f"{parent.session_id}-{label}",
                                             parent.workspace, {})
        self._hooks = ChildHooks(parent.hooks)

    @property
    def session_id(self) -> str:
        return self.parent.session_id  # the parent's tools-service session: the same read snapshots

    @property
    def workspace(self) -> str:
        return self.parent.workspace

    @property
    def settings(self) -> LoopSettings:
        return self._settings

    @property
    def model(self) -> ModelClient:
        return self.parent.model

    @property
    def messages(self) -> list[Message]:
        return self._messages

    @property
    def instructions(self) -> str:
        return self.parent.instructions

    @property
    def tools(self) -> ToolIndex:
        return self.parent.tools

    @property
    def runner(self) -> ToolRunner:
        return self.parent.runner

    @property
    def memory(self) -> MemoryClient | None:
        return self.parent.memory

    @property
    def mcp(self) -> McpClient | None:
        return self.parent.mcp

    @property
    def interactive(self) -> bool:
        return self.parent.interactive

    @property
    def allowed_tools(self) -> list[str]:
        return self.parent.allowed_tools

    @property
    def context(self) -> ContextKeeper:
        return self._context

    @property
    def hooks(self) -> TurnHooks:
        return self._hooks

    @property
    def acceptance(self) -> FixedAcceptance:
        return self._acceptance

    def emit(self, turn: int, body: EventBody) -> None:
        if body.kind not in NOT_RELAYED:
            self.parent.emit(self._turn, body)

    def gate(self, tool: ToolDef, arguments: dict[str, Any]) -> Verdict:
        return self.parent.gate(tool, arguments)

    async def turn_tail(self, emit: Callable[[EventBody], None]) -> dict[str, str]:
        return await self.parent.turn_tail(emit)

    async def step_tail(self, emit: Callable[[EventBody], None]) -> dict[str, str]:
        return await self.parent.step_tail(emit)

    def open_tasks(self) -> list[str]:
        """Only this step's item (a planning turn has none): the continuation is narrowed to it."""
        return [i.content for i in self._task_state().open_items() if i.id == self.item_id]

    def add_usage(self, usage: Usage) -> None:
        self.parent.add_usage(usage)

    def save(self) -> None:
        """Ephemeral: the plan's receipts and the task list are saved with the parent."""

    def end_of_turn(self) -> None:
        """Nothing to fold: a step has no session file."""
