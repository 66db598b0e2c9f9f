"""One child run: an ephemeral session in the loop service, driven by the ordinary ``pipeline.Turn``.

``ChildHost`` holds a child's state and gives its ``ports.TurnContext``: the parent's workspace, model,
configuration and permission gate; a fresh history seeded with the task; its
own limits (``subagent_*`` settings); its own tools-service session; a tool
stack without subAgent (no nesting), memory tools or ask_user. It is never
saved as a session: the manager writes its transcript when it ends. Its events
are relayed into the parent's event log, scoped by run id (its turn start and
end become ``subagent_started`` / ``subagent_finished``; its text streams are
not relayed: the final text is in the packet).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from typing import Any

from services.loop.compaction.keeper import ContextKeeper
from services.loop.compaction.settings import CompactionSettings
from services.loop.core.acceptance import NoAcceptance
from services.loop.core.approvals import Pending
from services.loop.core.ports import (
    McpClient,
    MemoryClient,
    Message,
    ModelClient,
    ToolCall,
    ToolDef,
    ToolOutcome,
    ToolRunner,
    TurnContext,
    TurnHooks,
    Usage,
    nothing,
)
from services.loop.core.sessions import Session
from services.loop.core.turn_events import (
    ContextAssembled,
    EventBody,
    InputQueued,
    ReasoningDelta,
    TextDelta,
    TurnFinished,
    TurnStarted,
)
from services.loop.policy.permissions import Verdict
from services.loop.policy.settings import LoopSettings
from services.loop.tools.registry import ToolRegistry
from services.loop.tools.todo_tool import TodoTool
from services.loop.turn.pipeline import Turn

# Tools a child never has: no nesting, no durable memory, nobody to ask.
CHILD_EXCLUDED = frozenset({"subAgent", "memory_search", "memory_write", "ask_user"})
# Child events not relayed to the parent's stream (the packet and subagent_* events carry their facts).
NOT_RELAYED = (TurnStarted, TurnFinished, TextDelta, ReasoningDelta, ContextAssembled, InputQueued)

NO_ACCEPTANCE = NoAcceptance()  # the parent's gate checks the work when the parent stops

CHILD_PREAMBLE = ("You are a subagent: another agent delegated one task to you. Work only on that task, "
                  "with the tools you have, and end with a final answer that reports what you did and found "
                  "(the agent that called you reads only that answer).")


@dataclasses.dataclass
class ParentView:
    """What a child takes from its parent session (runtime.SessionRuntime provides it)."""

    session_id: str
    workspace: str
    settings: LoopSettings
    model: ModelClient
    runner: ToolRunner
    instructions: str
    interactive: bool
    allowed_tools: list[str]
    gate: Callable[[ToolDef, dict[str, Any]], Verdict]
    add_usage: Callable[[Usage], None]
    compaction: CompactionSettings
    secret_env_names: list[str]
    hooks: TurnHooks | None = None
    memory: MemoryClient | None = None
    mcp: McpClient | None = None


class ChildHooks:
    """The parent's hooks as a child meets them: its tool and step hooks apply (a blocking tool.before
    hook blocks a child's call too); turn.start/turn.end are the parent's turn's, not the child's."""

    def __init__(self, parent: TurnHooks | None) -> None:
        self.parent = parent.scoped() if parent is not None else None

    def scoped(self) -> ChildHooks:
        return ChildHooks(self.parent)

    async def turn_start(self, turn: int, text: str, emit: Callable[[EventBody], None]) -> None:
        return None

    async def step_before(self, turn: int, step: int, emit: Callable[[EventBody], None]) -> str:
        return await self.parent.step_before(turn, step, emit) if self.parent is not None else ""

    async def tool_before(self, call: ToolCall, arguments: dict[str, Any], emit: Callable[[EventBody], None]
                          ) -> ToolCall | ToolOutcome:
        return await self.parent.tool_before(call, arguments, emit) if self.parent is not None else call

    async def tool_after(self, call: ToolCall, outcome: ToolOutcome, emit: Callable[[EventBody], None]) -> None:
        if self.parent is not None:
            await self.parent.tool_after(call, outcome, emit)

    async def turn_end(self, turn: int, status: str, text: str, emit: Callable[[EventBody], None]) -> None:
        return None

    async def stop_blocked(self, turn: int, reason: str, emit: Callable[[EventBody], None]) -> None:
        return None


def child_settings(parent: LoopSettings, timeout_seconds: float, max_iterations: int, token_budget: int
                   ) -> LoopSettings:
    """The parent's settings with the child's own limits (no auto-continuation: the parent decides)."""
    return dataclasses.replace(parent, turn_timeout_seconds=timeout_seconds, max_tool_iterations=max_iterations,
                               turn_token_budget=token_budget, max_auto_continuations=0)


class ChildHost:
    """One child run's own state (record, tools, usage, events) and its ``turn_context``."""

    def __init__(self, run_id: str, parent: ParentView, settings: LoopSettings, relay: Callable[[EventBody], None],
                 only_tools: list[str] | None = None, workspace: str = "") -> None:
        self.run_id = run_id
        self.parent = parent
        self._settings = settings
        self._relay = relay
        self.workspace = workspace or parent.workspace
        self.messages: list[Message] = []
        self.session = Session(id=run_id, workspace=self.workspace, model=parent.model.model_name)
        self.todo = TodoTool(self.session, lambda: settings.enforce_dependencies)
        self.only_tools = only_tools
        self.registry = ToolRegistry([self.todo.tool_def()])
        self._context = ContextKeeper.create(parent.compaction, parent.model, run_id, self.workspace, {})
        self._hooks = ChildHooks(parent.hooks)
        self.usage = Usage()
        self.tools_attached = False
        self.events: list[EventBody] = []

    def turn_context(self) -> TurnContext:
        """The child's turn context: the parent's workspace, model, runner and gate; its own record,
        tools, limits, context keeper and hooks; no memory, no MCP, no acceptance items."""
        parent = self.parent
        instructions = f"{parent.instructions}\n\n{CHILD_PREAMBLE}"
        return TurnContext(
            session_id=self.run_id, workspace=self.workspace, settings=self._settings, model=parent.model,
            messages=self.messages, instructions=lambda: instructions, tools=self.registry, runner=parent.runner,
            memory=None, mcp=None, interactive=lambda: parent.interactive, allowed_tools=parent.allowed_tools,
            context=self._context, hooks=self._hooks, acceptance=NO_ACCEPTANCE, emit=self.emit, gate=parent.gate,
            turn_tail=self.turn_tail, step_tail=_no_parts, open_tasks=self.todo.open_items,
            add_usage=self.add_usage, save=nothing, end_of_turn=nothing)  # the manager writes the transcript

    def emit(self, turn: int, body: EventBody) -> None:
        self.events.append(body)
        if not isinstance(body, NOT_RELAYED):
            self._relay(body)

    async def turn_tail(self, emit: Callable[[EventBody], None]) -> dict[str, str]:
        if not self.tools_attached:
            await self.attach_tools()
        return {}

    def add_usage(self, usage: Usage) -> None:
        self.usage = self.usage.add(usage)
        self.parent.add_usage(usage)  # counts toward the parent session's budget

    # -- the child's tools --

    async def attach_tools(self) -> None:
        """Open the child's own tools-service session (its own read snapshots) and take its catalog."""
        remote: list[ToolDef] = []
        try:
            await self.parent.runner.open_session(self.run_id, self.workspace, self.parent.secret_env_names)
            remote = await self.parent.runner.list_tools(self.run_id)
        except Exception:  # the child then runs with the loop's own tools only
            remote = []
        self.tools_attached = True
        self.registry.set_remote(self._allowed(remote))
        self.registry.set_local(self._allowed([self.todo.tool_def()]))

    def _allowed(self, tools: list[ToolDef]) -> list[ToolDef]:
        keep = [t for t in tools if t.name not in CHILD_EXCLUDED]
        if self.only_tools is not None:
            keep = [t for t in keep if t.name in self.only_tools]
        return keep

    async def close(self) -> None:
        with contextlib.suppress(Exception):  # a tools service that went away has nothing to close
            await self.parent.runner.close_session(self.run_id)


async def _no_parts(emit: Callable[[EventBody], None]) -> dict[str, str]:
    return {}


def new_turn(host: ChildHost, task: str) -> Turn:
    """The child's one turn, with approvals whose ids name the run."""
    turn = Turn(host.turn_context(), task, 1)
    turn.pending = Pending(1, prefix=host.run_id)
    return turn


def changed_files(turn: Turn) -> list[str]:
    """Paths the child's write/edit calls changed."""
    return sorted({str(o.data["path"]) for o in turn.outcomes
                   if o.ok and o.tool in ("write", "edit") and o.data.get("path")})


def denied_calls(turn: Turn) -> list[str]:
    return [f"{o.tool}: {o.error_code}" for o in turn.outcomes
            if o.error_code in ("permission_denied", "denied_by_user", "stopped_by_user")]


def elapsed_ms(started: float) -> float:
    return (time.monotonic() - started) * 1000.0
