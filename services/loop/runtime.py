"""Live sessions: each one's event log, turn queue, tool catalog and answers.

``LoopRuntime`` owns the open sessions of one loop service; a ``SessionRuntime``
runs its turns one at a time (input sent meanwhile is queued, in order) in a
task of its own, so a client that disconnects does not end the turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.kernel.config import user_config_path
from services.kernel.errors import ConfigError
from services.loop import limits
from services.loop.approvals import Decision, Resolution
from services.loop.attachments import InputFile
from services.loop.compaction.keeper import ContextKeeper
from services.loop.compaction.settings import CompactionSettings
from services.loop.errors import BadRequest, SessionNotFound
from services.loop.events import DEFAULT_WINDOW, EventLog, resume_point
from services.loop.harvest import harvest_quietly
from services.loop.hooks.config import HookSettings
from services.loop.hooks.engine import HookEngine
from services.loop.hooks.observers import ObservingHooks
from services.loop.instructions import load_notes, render_notes
from services.loop.local_tools import local_tools, mcp_describe_outcome, mcp_describe_tool
from services.loop.mcp_resources import MCP_RESOURCES
from services.loop.pipeline import Turn
from services.loop.plans.acceptance import AcceptanceBook, ProposeTool, config_items
from services.loop.plans.runner import PlanContext, PlanRequest, PlanRunner, refuse_topic
from services.loop.policy.guards import compile_bash_policy
from services.loop.policy.permissions import Verdict, decide_permission, mcp_gate
from services.loop.policy.settings import LoopSettings
from services.loop.ports import (
    McpClient,
    MemoryClient,
    Message,
    ModelClient,
    ToolCall,
    ToolContext,
    ToolDef,
    ToolOutcome,
    ToolRunner,
    Usage,
)
from services.loop.project_mcp import ProjectServers
from services.loop.prompt import BASE_INSTRUCTIONS, build_instructions
from services.loop.registry import ToolRegistry
from services.loop.sessions import Session, SessionStore, storage_error
from services.loop.skills.session import SessionSkills
from services.loop.subagents.child import ParentView
from services.loop.subagents.manager import SubagentLimits, SubagentManager
from services.loop.tail import SessionTail
from services.loop.todo_tool import TodoTool
from services.loop.traces import SpanExport, TraceWriter
from services.loop.turn_events import (
    Degraded,
    EventBody,
    InputQueued,
    SubagentScope,
)
from services.loop.webfetch import WEBFETCH

log = logging.getLogger("ai_coding.loop")

# Idle sessions kept in memory beyond this are dropped (least recently used first);
# they stay on disk and are loaded again by the next OpenSession.
MAX_IDLE_SESSIONS = 100


ENVIRONMENT_HINT = ("The services keep the environment they were started with: after exporting a variable, "
                    "run `ai-coding down` and retry.")


def with_environment_hint(err: ConfigError) -> ConfigError:
    """A model that cannot be resolved may need a variable the services were not started with:
    say so, since exporting it in the client's shell changes nothing for a running service."""
    if not (err.message.startswith("no model configured") or "is not set" in err.message):
        return err
    return ConfigError(err.message, hint=f"{err.hint} {ENVIRONMENT_HINT}".strip())


@dataclass
class SessionOptions:
    """How a session was opened."""

    auto_approve: bool = False
    interactive: bool = False
    cwd: str = ""
    """Where the user runs the client (inside the workspace): instructions are read down to here."""
    skill_dirs: list[str] = field(default_factory=list)
    """``--skills DIR``: skill directories replacing the defaults."""


@dataclass
class LoopDeps:
    """The loop's ports, built once per service."""

    model_for: Callable[[str], ModelClient]
    tools: ToolRunner
    settings: LoopSettings = field(default_factory=LoopSettings)
    memory: MemoryClient | None = None
    mcp: McpClient | None = None
    secret_env_names: list[str] = field(default_factory=list)
    fsync: bool = False
    traces: bool = True
    source_of: Callable[[str], str] = lambda dotted: "default"
    """Which config layer set a dotted key (for /config)."""
    config_data: dict[str, Any] = field(default_factory=dict)
    """The merged configuration as loaded (for /config; secrets are masked when shown)."""
    harvest: bool = False
    """Run the memory harvest after each turn (one extra model call, in the background)."""
    harvest_timeout_seconds: float = 60.0
    """Budget of one harvest (model call + reconcile)."""
    event_window: int = DEFAULT_WINDOW
    """Events kept per session for re-attaching clients."""
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    """The ``compaction`` section (thresholds and layers)."""
    span_export: SpanExport | None = None
    """Live OTLP export of finished turns (``tracing.otlp.endpoint``), shared by every session."""
    hooks: HookSettings = field(default_factory=HookSettings)
    """The ``hooks`` section (user layer only; off when empty)."""


class SessionRuntime:
    """One open session."""

    def __init__(self, session: Session, store: SessionStore, deps: LoopDeps, model: ModelClient,
                 options: SessionOptions) -> None:
        self.session = session
        self.store = store
        self.deps = deps
        self.model = model
        self.options = options
        self.settings = deps.settings
        self.bash_policy = compile_bash_policy(deps.settings.bash_policy)
        start, unissued = resume_point(session.last_seq, store.reserved_seq(session.id))
        self.events = EventLog(session.id, start, window=deps.event_window, reserve=self._reserve_seq,
                               unissued=unissued)
        self.todo = TodoTool(session, lambda: self.settings.enforce_dependencies)
        self.hooks = HookEngine(deps.hooks, session.id, session.workspace)
        self.subagents = SubagentManager(session.id, session.workspace, self._parent_view, self._emit_scoped,
                                         self._subagent_limits, deps.model_for)
        self.acceptance = AcceptanceBook(lambda: self.session.acceptance, self._store_acceptance,
                                         config_items(_plans_section(deps).get("acceptance"), session.workspace))
        self.observing_hooks = ObservingHooks(self.hooks, self._emit_now)
        self.subagents.hooks.append(self.observing_hooks)
        self.events.add_listener(self.observing_hooks.on_event)
        self.tools = ToolRegistry(self.tool_defs(options.interactive))
        self.warnings: list[str] = []
        self.context = ContextKeeper.create(deps.compaction, model, session.id, session.workspace, session.meta(),
                                            deps.memory)
        dropped = self.context.check(session.messages)
        if dropped:
            self.warnings.append(f"compaction: {dropped}")
        for tool in self.context.tool_defs():
            self.tools.register(tool)
        self.context.reveal = self.tools.load
        if self.context.archived_something():
            self.tools.load(["history_search"])
        self.queue: deque[tuple[str, tuple[InputFile, ...]] | PlanRequest] = deque()
        self.turn: Turn | None = None
        self.task: asyncio.Task[None] | None = None
        self.tools_attached = False
        self.harvest_task: asyncio.Task[None] | None = None
        self.attached = 0  # streams currently following this session
        self.permission_mode = "auto" if options.auto_approve else "confirm"  # /permissions changes it
        self.tool_warnings: list[tuple[str, str]] = []
        notes = load_notes(Path(session.workspace), Path(options.cwd) if options.cwd else None,
                           user_config_path().parent)
        self.notes = render_notes(notes)
        self.skills = SessionSkills(session.workspace, options.skill_dirs)
        for tool in self.skills.tool_defs():
            self.tools.register(tool)
        self.tail = SessionTail(session.workspace, deps.memory, deps.mcp,
                                build_instructions(BASE_INSTRUCTIONS, self.notes, self.skills.catalog))
        export = deps.span_export if deps.traces else None
        self.trace = TraceWriter(session.workspace, session.id, on_turn=export.turn_done if export else None
                                 ) if deps.traces else None
        if self.trace is not None:
            self.events.add_listener(self.trace.record)
        if export is not None:
            export.watch(session.id, self._export_failed)

    def _emit_now(self, body: EventBody) -> None:
        """Emit ``body`` as part of the running (or last) turn."""
        self.events.emit(self.turn.number if self.turn else self.session.turns, body)

    def _export_failed(self, reason: str) -> None:
        """The live trace exporter could not send this session's spans (told once per outage)."""
        self.events.emit(self.session.turns, Degraded(component="trace_export", reason=reason))

    # -- lifecycle --

    def set_options(self, options: SessionOptions) -> None:
        """A client re-opened the session: take its approval mode and whether someone can answer."""
        if options.interactive != self.options.interactive:
            self.tools.set_local(self.tool_defs(options.interactive))
        if options.auto_approve != self.options.auto_approve:
            self.permission_mode = "auto" if options.auto_approve else "confirm"
        self.options = options

    def reconfigure(self, deps: LoopDeps) -> None:
        """A re-open found the workspace's config changed: an idle session takes the new limits and
        bash policy (a running turn keeps the ones it started with; the model stays as chosen)."""
        if deps is self.deps or not self.idle:
            return
        self.settings = deps.settings
        self.context.reconfigure(deps.compaction, self.model)
        self.bash_policy = compile_bash_policy(deps.settings.bash_policy)
        self.hooks.settings = deps.hooks
        same_ports = (deps.memory is None) == (self.deps.memory is None) and (deps.mcp is None) == (
            self.deps.mcp is None)
        if same_ports:  # the catalog offers memory / MCP tools by their presence
            self.deps = deps

    async def attach_tools(self) -> None:
        """Register with the tools service and fetch its catalog (degrades to a warning; the next
        turn tries again)."""
        try:
            warnings = await self.deps.tools.open_session(self.session.id, self.session.workspace,
                                                          self.deps.secret_env_names)
            remote = await self.deps.tools.list_tools(self.session.id)
        except Exception as exc:  # the adapter raises one readable line
            self.tool_warnings = [("tools", f"tools unavailable: {exc}")]
            self.warnings.append(self.tool_warnings[0][1])
            return
        self.tools_attached = True
        self.tool_warnings = [("sandbox", w) for w in warnings]
        self.warnings += warnings
        self.tools.set_remote(remote)


    @property
    def idle(self) -> bool:
        """No turn running and none queued."""
        return self.task is None

    @property
    def busy(self) -> bool:
        """A turn runs or a client is following the session's stream (ListSessions' ``open``)."""
        return not self.idle or self.attached > 0

    def submit(self, text: str, images: tuple[InputFile, ...] = ()) -> None:
        """Run ``text`` (with any attached ``images``) as a turn now, or queue it behind the running one."""
        if not text.strip():
            raise BadRequest("empty input", hint="Send some text to start a turn.")
        limits.check_prompt(text)
        limits.check_session_size([self.store.snapshot_path(self.session.id),
                                   self.store.journal_path(self.session.id)], self.session.id)
        self.queue.append((text, images))
        if self.task is None:
            self.task = asyncio.create_task(self._drain())
        else:
            turn = self.turn.number if self.turn else self.session.turns
            self.events.emit(turn, InputQueued(input=text, position=len(self.queue)))

    def submit_plan(self, topic: str) -> None:
        """Run ``/plan <topic>`` now, or queue it; a topic naming paths outside the workspace is refused
        before anything runs (no model call)."""
        topic = " ".join(topic.split())
        if not topic:
            raise BadRequest("/plan needs a topic", hint="What should I plan? Send /plan <topic>.")
        limits.check_prompt(topic)
        outside = refuse_topic(topic, self.session.workspace)
        if outside:
            raise BadRequest(f"the plan topic names paths outside the workspace: {', '.join(outside)}",
                             hint="Plan work inside the workspace, or open the other directory as its own workspace.",
                             reason="plan_outside_workspace")
        self.queue.append(PlanRequest(topic))
        if self.task is None:
            self.task = asyncio.create_task(self._drain())
        else:
            turn = self.turn.number if self.turn else self.session.turns
            self.events.emit(turn, InputQueued(input=f"/plan {topic}", position=len(self.queue)))

    async def _drain(self) -> None:
        try:
            while self.queue:
                entry = self.queue.popleft()
                self.session.turns += 1
                if self.trace is not None:
                    self.trace.start_turn(self.session.turns)
                if isinstance(entry, PlanRequest):
                    await PlanRunner(self._plan_context(), entry.topic, self.session.turns).run()
                    continue
                text, images = entry
                self.turn = Turn(self, text, self.session.turns, images)
                await self.turn.run()
                self._start_harvest()
        except Exception as exc:
            log.exception("turn of session %s crashed", self.session.id)
            if self.turn is not None:
                self.turn.crashed(exc)
        finally:
            self.turn = None
            self.task = None
            self.events.wake()

    def _start_harvest(self) -> None:
        memory = self.deps.memory
        if not self.deps.harvest or memory is None or self.harvest_task is not None:
            return
        start, messages = self.session.harvest_cursor, list(self.session.messages)
        if start >= len(messages):
            return

        async def run() -> None:
            try:
                await self.hooks.observe("memory.harvest", {"from_message": start, "messages": len(messages)},
                                         self._emit_now)
                ok = await harvest_quietly(self.model, memory, self.session.workspace, self.session.id,
                                           messages, start, self.deps.harvest_timeout_seconds)
                if ok:
                    self.session.harvest_cursor = len(messages)
                    self.save()
            finally:
                self.harvest_task = None

        self.harvest_task = asyncio.create_task(run())

    # -- client messages --

    def interrupt(self, scope: str) -> bool:
        """Cancel the running batch (``batch``) or the whole turn (``turn``)."""
        turn = self.turn
        if turn is None or self.task is None:
            return False
        if scope == "batch":
            if turn.batch_task is None:
                return False
            turn.batch_task.cancel()
            return True
        turn.stop_reason = "interrupted"
        self.task.cancel()
        return True

    def answer_approval(self, request_id: str, decision: Decision | None) -> bool:
        """Settle an approval (the turn's or a subagent child's); a malformed answer (None) counts as deny."""
        resolution = (Resolution(request_id, Decision.DENY, source="malformed") if decision is None
                      else Resolution(request_id, decision, source="user"))
        if self.turn is not None and self.turn.pending.resolve(resolution):
            return True
        return self.subagents.resolve(resolution)

    def answer_question(self, request_id: str, answer: str) -> bool:
        if self.turn is None:
            return False
        return self.turn.pending.resolve(Resolution(request_id, Decision.ALLOW_ONCE, answer=answer, source="user"))

    async def stop(self, reason: str) -> None:
        """End a running turn with ``reason`` (service shutdown) and save."""
        self.queue.clear()
        if self.harvest_task is not None:
            self.harvest_task.cancel()
        await self.subagents.shutdown()
        task, turn = self.task, self.turn
        if task is not None and turn is not None:
            turn.stop_reason = reason
            task.cancel()
            await asyncio.wait({task}, timeout=5.0)
        self.store.compact(self.session)
        self.store.close(self.session.id)

    # -- the turn's host (ports.TurnHost) --

    @property
    def session_id(self) -> str:
        return self.session.id

    @property
    def workspace(self) -> str:
        return self.session.workspace

    @property
    def messages(self) -> list[Message]:
        return self.session.messages

    @property
    def runner(self) -> ToolRunner:
        return self.deps.tools

    @property
    def memory(self) -> MemoryClient | None:
        return self.deps.memory

    @property
    def mcp(self) -> McpClient | None:
        return self.deps.mcp

    @property
    def interactive(self) -> bool:
        return self.options.interactive

    @property
    def allowed_tools(self) -> list[str]:
        return self.session.allowed_tools

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
        if self.skills.refresh(emit):  # a declared cache break: the catalog is in the system message
            self.tail.set_base(build_instructions(BASE_INSTRUCTIONS, self.notes, self.skills.catalog))
            if self.skills.catalog:  # `skill` is deferred: sent only once there is a skill to read
                self.tools.load(["skill"])
        parts = await self.tail.step_parts(emit, self.todo.state())
        if self.tail.mcp_catalog:  # a server is connected: both offered from this step on, in their fixed place
            self.tools.load(["mcp_call", "mcp_describe"])
        return parts

    def gate(self, tool: ToolDef, arguments: dict[str, Any]) -> Verdict:
        """The permission gate for one call (auto-approve: WARN allowed, DENY still denied)."""
        if tool.name == "mcp_call":
            return mcp_gate(str(arguments.get("server", "")), str(arguments.get("tool", "")),
                            self.tail.mcp_permissions, self.permission_mode, self.session.allowed_tools)
        return decide_permission(tool.name, arguments, self.session.allowed_tools, self.permission_mode,
                                 bash_policy=self.bash_policy, declared=tool.permission, trusted=tool.local)

    def open_tasks(self) -> list[str]:
        return self.todo.open_items()

    def add_usage(self, usage: Usage) -> None:
        self.session.add_usage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)

    # -- the session's own tools --

    def tool_defs(self, interactive: bool) -> list[ToolDef]:
        """The loop's own tools for this session: todo_write (on this session's task state), the
        stateless ones of local_tools, and mcp_describe (on the catalog this session fetched)."""
        tools = [self.todo.tool_def(), ProposeTool(self.acceptance).tool_def(),
                 *local_tools(interactive, self.deps.memory is not None, self.deps.mcp is not None), WEBFETCH,
                 *self.subagents.tool_defs()]
        if self.deps.mcp is not None:  # it reads the catalog this session last fetched
            tools += [mcp_describe_tool(self._mcp_describe), MCP_RESOURCES]  # mcp_resources: deferred, last
        return tools

    def _parent_view(self) -> ParentView:
        """What a subagent child takes from this session, read when it starts."""
        return ParentView(self.session.id, self.session.workspace, self.settings, self.model, self.deps.tools,
                          self.tail.instructions, self.options.interactive, self.session.allowed_tools, self.gate,
                          self.add_usage, self.deps.compaction, self.deps.secret_env_names, hooks=self.hooks)

    def _subagent_limits(self) -> SubagentLimits:
        st = self.settings
        return SubagentLimits(st.subagent_timeout_seconds, st.subagent_max_iterations, st.subagent_token_budget,
                              st.max_parallel_subagents, st.subagent_isolation)

    def _emit_scoped(self, body: EventBody, scope: SubagentScope | None) -> None:
        self.events.emit(self.turn.number if self.turn else self.session.turns, body, scope)

    async def _mcp_describe(self, ctx: ToolContext, call: ToolCall, arguments: dict[str, Any]) -> ToolOutcome:
        return mcp_describe_outcome(call.id, self.tail.mcp_described, arguments)

    def _plan_context(self) -> PlanContext:
        def set_turn(turn: Turn) -> None:
            self.turn = turn

        def take_note() -> str:
            note, self.context.note = self.context.note, ""
            return note

        return PlanContext(self, self.session, self.deps.compaction, set_turn, self.save, take_note)

    def _store_acceptance(self, items: list[dict[str, Any]]) -> None:
        self.session.acceptance = items

    def _reserve_seq(self, mark: int) -> None:
        try:
            self.store.reserve_seq(self.session.id, mark)
        except OSError as err:  # the turn goes on; a crash now could make a restarted loop reuse numbers
            log.error("reserving event numbers for session %s failed: %s", self.session.id, err)

    def save(self) -> None:
        """Persist the session; a failing disk degrades (an event) instead of ending the turn."""
        self.session.last_seq = self.events.last_seq
        self.session.compaction, self.session.turn_digests = self.context.state.to_json(), list(self.context.digests)
        try:
            self.store.save(self.session)
        except OSError as err:
            log.error("saving session %s failed: %s", self.session.id, err)
            turn = self.turn.number if self.turn else self.session.turns
            self.events.emit(turn, Degraded(component="session_save", reason=str(storage_error(err, self.store.dir))))

    def end_of_turn(self) -> None:
        try:
            self.store.maybe_compact(self.session)
        except OSError as err:
            log.error("compacting session %s failed: %s", self.session.id, err)
        if self.trace is not None:
            self.trace.end_turn()


def _plans_section(deps: LoopDeps) -> dict[str, Any]:
    plans = deps.config_data.get("plans")
    return plans if isinstance(plans, dict) else {}


class LoopRuntime:
    """All sessions open in this loop service."""

    def __init__(self, deps: LoopDeps,
                 deps_for: Callable[[str], tuple[LoopDeps, list[str]]] | None = None) -> None:
        self.deps = deps
        # A workspace's deps (its layered config) and that config's warnings.
        self.deps_for = deps_for or (lambda workspace: (deps, []))
        self.sessions: dict[str, SessionRuntime] = {}
        self._stores: dict[str, SessionStore] = {}
        self._evicted: dict[str, tuple[str, SessionOptions]] = {}
        # Opens of one stored session in flight: [lock, openers]. Loading a session and attaching its
        # tools awaits, so without the lock two opens (a REPL's follower and its driver after a loop
        # restart) each built a runtime of their own over the same journal.
        self._opening: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self.project_mcp = ProjectServers()

    def store(self, workspace: str) -> SessionStore:
        if workspace not in self._stores:
            self._stores[workspace] = SessionStore(workspace, fsync=self.deps.fsync)
        return self._stores[workspace]

    async def open(self, workspace: str, session_id: str, model: str, options: SessionOptions
                   ) -> tuple[SessionRuntime, list[str]]:
        """Create or resume a session; returns its runtime and warnings."""
        store = self.store(workspace)
        deps, config_warnings = self.deps_for(workspace)
        if not session_id:
            return await self._start(store, deps, workspace, store.create(model), model, options, config_warnings)
        sid = store.resolve(session_id)
        lock, openers = self._opening.setdefault(sid, (asyncio.Lock(), [0]))
        openers[0] += 1
        try:
            async with lock:
                live = self.sessions.get(sid)
                if live is not None:
                    live.set_options(options)
                    live.reconfigure(deps)
                    return live, config_warnings
                session, warnings = store.load(sid)
                return await self._start(store, deps, workspace, session, model, options,
                                         [*config_warnings, *warnings])
        finally:
            openers[0] -= 1
            if not openers[0]:
                del self._opening[sid]

    async def _start(self, store: SessionStore, deps: LoopDeps, workspace: str, session: Session, model: str,
                     options: SessionOptions, warnings: list[str]) -> tuple[SessionRuntime, list[str]]:
        """A runtime for ``session`` (new or just loaded), registered; its warnings after ``warnings``."""
        try:
            client = deps.model_for(model or session.model)
        except ConfigError as err:
            if model or not session.model:
                raise with_environment_hint(err) from None
            # The session's model left the config: continue it with the default rather than refuse it.
            try:
                client = deps.model_for("")
            except ConfigError:
                raise with_environment_hint(err) from None
            warnings = [*warnings, f"this session used model `{session.model}`, which is no longer configured "
                                   f"({err}); continuing with `{client.model_name}`"]
        session.model = client.model_name
        rt = SessionRuntime(session, store, deps, client, options)
        await rt.attach_tools()
        await rt.subagents.clean_orphans()  # worktrees of a loop that crashed with children running
        self.sessions[session.id] = rt
        await self._evict_idle(keep=session.id)
        project = await self.project_mcp.open(deps.mcp, workspace)
        return rt, [*warnings, *rt.warnings, *project]

    async def _evict_idle(self, keep: str) -> None:
        idle = [rt for sid, rt in self.sessions.items() if rt.idle and not rt.subagents.running() and sid != keep]
        victims = sorted(idle, key=lambda r: r.session.updated)[: max(len(idle) - MAX_IDLE_SESSIONS, 0)]
        # Take every victim out before the first await: an open that overlaps this one must not
        # pick the same sessions again (it did, and its `del` raised KeyError).
        for rt in victims:
            del self.sessions[rt.session.id]
            self._evicted[rt.session.id] = (rt.session.workspace, rt.options)
            rt.store.compact(rt.session)
            rt.store.close(rt.session.id)
        for rt in victims:
            await self.deps.tools.close_session(rt.session.id)

    async def get(self, session_id: str) -> SessionRuntime:
        """An open session; one evicted from memory for being idle is loaded again."""
        rt = self.sessions.get(session_id)
        if rt is None and session_id in self._evicted:
            workspace, options = self._evicted.pop(session_id)
            rt, _ = await self.open(workspace, session_id, "", options)
        if rt is None:
            raise SessionNotFound(f"session {session_id!r} is not open in this loop service",
                                  hint="Call OpenSession with its workspace first.")
        return rt

    async def shutdown(self) -> None:
        """Give running turns their final event and save every session."""
        await asyncio.gather(*(rt.stop("service_stopping") for rt in self.sessions.values()))
