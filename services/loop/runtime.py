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
from typing import Any

from services.loop.approvals import Decision, Resolution
from services.loop.dispatch import DispatchContext, Gate, static_gate
from services.loop.errors import BadRequest, SessionNotFound
from services.loop.events import EventLog
from services.loop.local_tools import McpClient, MemoryClient, local_tools
from services.loop.pipeline import Turn
from services.loop.policy.settings import LoopSettings
from services.loop.ports import ModelClient, ToolRunner, Usage
from services.loop.prompt import BASE_INSTRUCTIONS, build_instructions, read_project_notes
from services.loop.sessions import Session, SessionStore
from services.loop.traces import TraceWriter

log = logging.getLogger("ai_coding.loop")


@dataclass
class SessionOptions:
    """How a session was opened."""

    auto_approve: bool = False
    interactive: bool = False


@dataclass
class LoopDeps:
    """The loop's ports, built once per service."""

    model_for: Callable[[str], ModelClient]
    tools: ToolRunner
    settings: LoopSettings = field(default_factory=LoopSettings)
    memory: MemoryClient | None = None
    mcp: McpClient | None = None
    gate: Gate = static_gate
    secret_env_names: list[str] = field(default_factory=list)
    fsync: bool = False
    traces: bool = True


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
        self.events = EventLog(session.id, session.last_seq)
        self.catalog: list[dict[str, Any]] = local_tools(options.interactive, deps.memory is not None,
                                                         deps.mcp is not None)
        self.loaded: set[str] = set()
        self.queue: deque[str] = deque()
        self.turn: Turn | None = None
        self.task: asyncio.Task[None] | None = None
        self.warnings: list[str] = []
        notes_name, notes = read_project_notes(session.workspace)
        self.instructions = build_instructions(BASE_INSTRUCTIONS, notes_name, notes, "")
        self.trace = TraceWriter(session.workspace, session.id) if deps.traces else None
        if self.trace is not None:
            self.events.add_listener(self.trace.record)

    # -- lifecycle --

    async def attach_tools(self) -> None:
        """Register with the tools service and fetch its catalog (degrades to a warning)."""
        try:
            self.warnings += await self.deps.tools.open_session(self.session.id, self.session.workspace,
                                                                self.deps.secret_env_names)
            remote = await self.deps.tools.list_tools(self.session.id)
        except Exception as exc:  # the adapter raises one readable line
            self.warnings.append(f"tools unavailable: {exc}")
            return
        names = {t["function"]["name"] for t in remote}
        self.catalog = [*remote, *(t for t in self.catalog if t["function"]["name"] not in names)]

    @property
    def idle(self) -> bool:
        return self.task is None

    def submit(self, text: str) -> None:
        """Run ``text`` as a turn now, or queue it behind the running one."""
        if not text.strip():
            raise BadRequest("empty input", hint="Send some text to start a turn.")
        self.queue.append(text)
        if self.task is None:
            self.task = asyncio.create_task(self._drain())
        else:
            turn = self.turn.number if self.turn else self.session.turns
            self.events.emit("input_queued", turn, input=text, position=len(self.queue))

    async def _drain(self) -> None:
        try:
            while self.queue:
                text = self.queue.popleft()
                self.session.turns += 1
                self.turn = Turn(self, text, self.session.turns)
                if self.trace is not None:
                    self.trace.start_turn(self.session.turns)
                await self.turn.run()
        except Exception:
            log.exception("turn of session %s crashed", self.session.id)
        finally:
            self.turn = None
            self.task = None
            self.events.wake()

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
        """Settle an approval; a malformed answer (None) counts as deny."""
        if self.turn is None:
            return False
        if decision is None:
            return self.turn.pending.resolve(Resolution(request_id, Decision.DENY, source="malformed"))
        return self.turn.pending.resolve(Resolution(request_id, decision, source="user"))

    def answer_question(self, request_id: str, answer: str) -> bool:
        if self.turn is None:
            return False
        return self.turn.pending.resolve(Resolution(request_id, Decision.ALLOW_ONCE, answer=answer, source="user"))

    async def stop(self, reason: str) -> None:
        """End a running turn with ``reason`` (service shutdown) and save."""
        self.queue.clear()
        task, turn = self.task, self.turn
        if task is not None and turn is not None:
            turn.stop_reason = reason
            task.cancel()
            await asyncio.wait({task}, timeout=5.0)
        self.store.compact(self.session)

    # -- what the turn needs --

    def dispatch_context(self, turn: Turn) -> DispatchContext:
        return DispatchContext(
            session_id=self.session.id, workspace=self.session.workspace, tools=self.deps.tools,
            catalog=self.catalog, loaded=self.loaded, allowed_always=self.session.allowed_tools,
            auto_approve=self.options.auto_approve, interactive=self.options.interactive, emit=turn.emit,
            pending=turn.pending, remaining=turn.remaining, memory=self.deps.memory, mcp=self.deps.mcp,
            gate=self.deps.gate, ask_timeout_seconds=self.settings.question_timeout_seconds,
            on_degraded=lambda component, reason: turn.emit("degraded", component=component, reason=reason),
        )

    def tail_parts(self) -> dict[str, str]:
        """Volatile tail blocks besides the environment."""
        parts: dict[str, str] = {}
        tasks = self.session.task_state.get("items") or []
        if tasks:
            parts["task-state"] = "\n".join(f"[{t.get('status')}] {t.get('id')}. {t.get('content')}" for t in tasks)
        return parts

    def open_tasks(self) -> list[str]:
        items = self.session.task_state.get("items") or []
        return [str(t.get("content")) for t in items if t.get("status") in ("pending", "in_progress", "blocked")]

    def add_usage(self, usage: Usage) -> None:
        total = self.session.usage
        total["promptTokens"] = int(total.get("promptTokens", 0)) + usage.prompt_tokens
        total["completionTokens"] = int(total.get("completionTokens", 0)) + usage.completion_tokens
        total["totalTokens"] = int(total.get("totalTokens", 0)) + usage.total_tokens

    def save(self) -> None:
        self.session.last_seq = self.events.last_seq
        self.store.save(self.session)

    def end_of_turn(self) -> None:
        self.store.maybe_compact(self.session)
        if self.trace is not None:
            self.trace.end_turn()


class LoopRuntime:
    """All sessions open in this loop service."""

    def __init__(self, deps: LoopDeps) -> None:
        self.deps = deps
        self.sessions: dict[str, SessionRuntime] = {}
        self._stores: dict[str, SessionStore] = {}

    def store(self, workspace: str) -> SessionStore:
        if workspace not in self._stores:
            self._stores[workspace] = SessionStore(workspace, fsync=self.deps.fsync)
        return self._stores[workspace]

    async def open(self, workspace: str, session_id: str, model: str, options: SessionOptions
                   ) -> tuple[SessionRuntime, list[str]]:
        """Create or resume a session; returns its runtime and warnings."""
        store = self.store(workspace)
        warnings: list[str] = []
        if session_id:
            sid = store.resolve(session_id)
            live = self.sessions.get(sid)
            if live is not None:
                live.options = options
                return live, []
            session, warnings = store.load(sid)
        else:
            session = store.create(model)
        client = self.deps.model_for(model or session.model)
        session.model = client.model_name
        rt = SessionRuntime(session, store, self.deps, client, options)
        await rt.attach_tools()
        self.sessions[session.id] = rt
        return rt, [*warnings, *rt.warnings]

    def get(self, session_id: str) -> SessionRuntime:
        rt = self.sessions.get(session_id)
        if rt is None:
            raise SessionNotFound(f"session {session_id!r} is not open in this loop service",
                                  hint="Call OpenSession with its workspace first.")
        return rt

    async def shutdown(self) -> None:
        """Give running turns their final event and save every session."""
        await asyncio.gather(*(rt.stop("service_stopping") for rt in self.sessions.values()))
