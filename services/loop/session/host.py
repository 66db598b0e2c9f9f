"""The session as its turns' host: the ``ports.TurnContext`` a ``Turn`` runs on, and what it calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.kernel.netpolicy import NetConfig
from services.loop.core.events import EventLog
from services.loop.core.feature import SessionFeature
from services.loop.core.ports import (
    AcceptanceSource,
    ContextWindow,
    McpClient,
    MemoryClient,
    ModelClient,
    ToolDef,
    ToolRunner,
    TurnContext,
    TurnHooks,
    Usage,
)
from services.loop.core.sessions import Session
from services.loop.core.turn_events import Degraded, EventBody
from services.loop.policy.guards import CompiledBashPolicy
from services.loop.policy.permissions import PermissionMode, Verdict, decide_permission, mcp_gate
from services.loop.policy.settings import LoopSettings
from services.loop.session.deps import LoopDeps, SessionOptions
from services.loop.tools.local_tools import local_tools
from services.loop.tools.mcp_tools import mcp_tools
from services.loop.tools.registry import ToolRegistry
from services.loop.tools.todo_tool import TodoTool
from services.loop.tools.webfetch import webfetch_tool
from services.loop.tools.webgate import webfetch_gate
from services.loop.turn.tail import SessionTail


class SessionHost:
    """A session's ``TurnContext`` over its record, ports and roles (``SessionRuntime`` builds them)."""

    session: Session
    deps: LoopDeps
    options: SessionOptions
    events: EventLog
    tail: SessionTail
    todo: TodoTool
    permission_mode: PermissionMode
    bash_policy: CompiledBashPolicy | None
    net: NetConfig
    tools_attached: bool
    editors: int
    tool_warnings: list[tuple[str, str]]
    features: list[SessionFeature]
    _context: ContextWindow | None
    _hooks: TurnHooks
    _acceptance: AcceptanceSource

    settings: LoopSettings
    model: ModelClient
    tools: ToolRegistry

    async def attach_tools(self) -> None:
        raise NotImplementedError

    def save(self) -> None:
        raise NotImplementedError

    def end_of_turn(self) -> None:
        raise NotImplementedError

    def turn_context(self) -> TurnContext:
        """What the session's next turn reads and calls of it."""
        session = self.session
        return TurnContext(
            session_id=session.id, workspace=session.workspace, settings=self.settings, model=self.model,
            messages=session.messages, instructions=lambda: self.tail.instructions, tools=self.tools,
            runner=self.deps.tools, memory=self.deps.memory, mcp=self.mcp,
            interactive=lambda: self.options.interactive, allowed_tools=session.allowed_tools,
            context=self.context, hooks=self._hooks, acceptance=self._acceptance, emit=self.emit, gate=self.gate,
            turn_tail=self.turn_tail, step_tail=self.step_tail, open_tasks=self.open_tasks,
            add_usage=self.add_usage, save=self.save, end_of_turn=self.end_of_turn,
            editor_buffers=lambda: self.editors > 0)

    @property
    def runner(self) -> ToolRunner:
        return self.deps.tools

    @property
    def memory(self) -> MemoryClient | None:
        return self.deps.memory

    @property
    def mcp(self) -> McpClient | None:
        """The gateway as this session sees it (with the servers added for it alone)."""
        return self.deps.mcp.for_session(self.session.id) if self.deps.mcp is not None else None

    @property
    def interactive(self) -> bool:
        return self.options.interactive

    @property
    def skill_dirs(self) -> list[str]:
        return self.options.skill_dirs

    @property
    def context(self) -> ContextWindow:
        if self._context is None:
            raise AssertionError("no session feature gives the turn its context window")
        return self._context

    @property
    def hooks(self) -> TurnHooks:
        return self._hooks

    def emit(self, turn: int, body: EventBody) -> None:
        self.events.emit(turn, body)

    @property
    def instructions(self) -> str:
        """The system message (with the MCP catalog once fetched)."""
        return self.tail.instructions

    async def turn_tail(self, emit: Callable[[EventBody], None]) -> dict[str, str]:
        if not self.tools_attached:
            await self.attach_tools()
        for component, warning in self.tool_warnings:
            emit(Degraded(component=component, reason=warning))
        return await self.tail.turn_parts(emit)

    async def step_tail(self, emit: Callable[[EventBody], None]) -> dict[str, str]:
        parts: dict[str, str] = {}
        for feature in self.features:  # first: a feature may load a tool (a skill appeared)
            parts.update(await feature.step_part(emit))
        parts = {**parts, **await self.tail.step_parts(emit, self.todo.state())}
        if self.tail.mcp_catalog:  # the catalog in the system message names mcp_call and mcp_describe
            self.tools.load(["mcp_call", "mcp_describe"])
        return parts

    def gate(self, tool: ToolDef, arguments: dict[str, Any]) -> Verdict:
        """The permission gate for one call (auto-approve: WARN allowed, DENY still denied)."""
        if tool.name == "mcp_call":
            return mcp_gate(str(arguments.get("server", "")), str(arguments.get("tool", "")),
                            self.tail.mcp_permissions, self.permission_mode, self.session.allowed_tools)
        if tool.name == "webfetch":  # never auto-approved: it connects on the model's say
            return webfetch_gate(arguments, self.session.allowed_tools, self.permission_mode, self.net,
                                 self.options.interactive)
        return decide_permission(tool.name, arguments, self.session.allowed_tools, self.permission_mode,
                                 bash_policy=self.bash_policy, declared=tool.permission, trusted=tool.local)

    def open_tasks(self) -> list[str]:
        return self.todo.open_items()

    def add_usage(self, usage: Usage) -> None:
        self.session.add_usage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens,
                               cached_tokens=usage.cached_tokens, cost_usd=usage.cost_usd)

    # -- the session's own tools --

    def tool_defs(self, interactive: bool) -> list[ToolDef]:
        """The loop's own tools for this session: todo_write (on this session's task state), the
        stateless ones of local_tools, and mcp_describe (on the catalog this session fetched);
        the features register theirs."""
        tools = [self.todo.tool_def(), *local_tools(interactive, self.deps.memory is not None),
                 webfetch_tool(self.net)]
        if self.deps.mcp is not None:  # they read the catalog this session last fetched
            tools += mcp_tools(lambda: self.tail.mcp_schemas, lambda: self.tail.mcp_described)
        return tools

