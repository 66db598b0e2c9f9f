"""Live sessions: each one's event log, turn queue, tool catalog and answers.

A ``SessionRuntime`` runs one open session's turns one at a time (input sent meanwhile is queued) in a task
of its own, so a client that disconnects does not end the turn (``open_sessions.LoopRuntime`` holds them all).
It is the composition root of the session's features (core/feature.py): it imports none of them, it runs the
list ``LoopDeps.features`` holds."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from services.kernel.config import user_config_path
from services.loop.core import limits
from services.loop.core.acceptance import NoAcceptance
from services.loop.core.approvals import Decision, RequestKind, Resolution
from services.loop.core.attachments import InputFile
from services.loop.core.crash_marks import open_turn_mark
from services.loop.core.domain import InterruptScope
from services.loop.core.errors import BadRequest
from services.loop.core.events import EventLog, resume_point
from services.loop.core.feature import (
    Feature,
    QueuedRun,
    RewindPoint,
    SessionFeature,
    check_slot_keys,
    feature_role,
)
from services.loop.core.instructions import load_notes, notes_cut_warning, render_notes
from services.loop.core.ports import (
    AcceptanceSource,
    ModelClient,
    TurnHooks,
)
from services.loop.core.sessions import Session, SessionStore, storage_error
from services.loop.core.tasks import TaskState
from services.loop.core.turn_events import Degraded, EventBody, InputQueued, SubagentScope
from services.loop.policy.guards import compile_bash_policy
from services.loop.policy.permissions import PermissionMode, opening_mode
from services.loop.session.deps import LoopDeps, SessionOptions
from services.loop.session.host import SessionHost
from services.loop.tools.registry import ToolRegistry
from services.loop.tools.todo_tool import TodoTool
from services.loop.turn.hooks import PassHooks
from services.loop.turn.pipeline import Turn
from services.loop.turn.prompt import base_instructions, build_instructions
from services.loop.turn.tail import SessionTail

log = logging.getLogger("ai_coding.loop")
F = TypeVar("F")

__all__ = ["LoopDeps", "SessionOptions", "SessionRuntime"]


class SessionRuntime(SessionHost):
    """One open session: the composition root of its features and the host of its turns."""

    def __init__(self, session: Session, store: SessionStore, deps: LoopDeps, model: ModelClient,
                 options: SessionOptions) -> None:
        self.session = session
        self.store = store
        self.deps = deps
        self.model = model
        self.options = options
        self.settings = deps.settings
        self.compaction_settings = deps.compaction
        self.bash_policy = compile_bash_policy(deps.settings.bash_policy)
        self.net = deps.net
        start, unissued = resume_point(session.last_seq, store.reserved_seq(session.id))
        self.events = EventLog(session.id, start, window=deps.event_window, reserve=self._reserve_seq,
                               unissued=unissued)
        self.todo = TodoTool(session, lambda: self.settings.enforce_dependencies)
        self.tools = ToolRegistry(self.tool_defs(options.interactive))
        self.warnings: list[str] = []
        self.queue: deque[tuple[str, tuple[InputFile, ...]] | QueuedRun] = deque()
        self.turn: Turn | None = None
        self.task: asyncio.Task[None] | None = None
        self.tools_attached = False
        self.attached = 0  # streams currently following this session
        self.editors = 0  # of those, streams that answer BufferRequested (an editor's ACP client)
        # /permissions changes it (and the session keeps it across loop restarts)
        self.permission_mode: PermissionMode = opening_mode(options.auto_approve, session.permission_mode)
        self.tool_warnings: list[tuple[str, str]] = []
        notes = load_notes(Path(session.workspace), Path(options.cwd) if options.cwd else None,
                           user_config_path().parent)
        self.notes = render_notes(notes)
        if cut := notes_cut_warning(notes):
            self.warnings.append(cut)
        self._catalog = ""  # the skill catalog the system message lists (the skills feature sets it)
        self.tail = SessionTail(session.workspace, deps.memory, self.mcp,
                                build_instructions(base_instructions(options.interactive), self.notes, ""))
        self.features: list[SessionFeature] = []
        for build in deps.features:  # each may find the ones built before it
            self.features.append(build(self))
        for feature in self.features:
            self.warnings += feature.warnings
            for tool in feature.tools():
                self.tools.register(tool)
            if type(feature).on_event is not Feature.on_event:  # a listener per event costs: only real ones
                self.events.add_listener(feature.on_event)
        self._may_be_busy = [f for f in self.features if type(f).busy is not Feature.busy]
        """The features that can have work running between turns (asked by ``quiet``, which
        eviction asks of every open session at each OpenSession)."""
        for feature in self.features:
            feature.installed()
        check_slot_keys(self.features)
        self._context = feature_role(self.features, "context", None)
        self._hooks: TurnHooks = feature_role(self.features, "hooks", PassHooks())
        self._acceptance: AcceptanceSource = feature_role(self.features, "acceptance", NoAcceptance())

    def emit_now(self, body: EventBody, scope: SubagentScope | None = None) -> None:
        """Emit ``body`` as part of the running (or last) turn."""
        self.events.emit(self.turn.number if self.turn else self.session.turns, body, scope)

    def feature(self, kind: type[F]) -> F | None:
        """The session's feature of this class, if it is composed in."""
        return next((f for f in self.features if isinstance(f, kind)), None)

    def commands(self) -> dict[str, Callable[[str], Awaitable[tuple[str, str]]]]:
        """The slash commands the features add, by name."""
        return {name: run for feature in self.features for name, run in feature.commands().items()}

    def set_instructions_base(self, catalog: str) -> None:
        self._catalog = catalog
        self.tail.set_base(build_instructions(base_instructions(self.options.interactive), self.notes, catalog))

    def set_model(self, model: ModelClient) -> None:
        """``/model``: the session continues with ``model``."""
        self.model = model
        self.session.model = model.model_name
        for feature in self.features:
            feature.model_changed(model)

    def set_turn(self, turn: Any) -> None:
        self.turn = turn

    # -- lifecycle --

    def set_options(self, options: SessionOptions) -> None:
        """A client re-opened the session: take its approval mode and whether someone can answer."""
        if options.interactive != self.options.interactive:
            self.tools.set_local(self.tool_defs(options.interactive))
            # The system message names ask_user only when it is offered (a declared cache break).
            self.tail.set_base(build_instructions(base_instructions(options.interactive), self.notes, self._catalog))
        if options.auto_approve != self.options.auto_approve:
            self.permission_mode = opening_mode(options.auto_approve, self.session.permission_mode)
        self.options = options

    def reconfigure(self, deps: LoopDeps) -> None:
        """A re-open found the workspace's config changed: an idle session takes the new limits and
        bash policy (a running turn keeps the ones it started with; the model stays as chosen; the ports only
        when memory and MCP stay as present or absent as they were: the catalog offers their tools by it)."""
        if deps is self.deps or not self.idle:
            return
        self.settings = deps.settings
        self.compaction_settings = deps.compaction
        self.bash_policy = compile_bash_policy(deps.settings.bash_policy)
        self.net = deps.net
        for feature in self.features:
            feature.reconfigure(deps)
        if (deps.memory is None, deps.mcp is None) == (self.deps.memory is None, self.deps.mcp is None):
            self.deps = deps

    async def attach_tools(self) -> None:
        """Register with the tools service and fetch its catalog (a warning if down; the next turn retries).

        Both calls are sent at once: the catalog does not depend on the session (the service lists
        the same tools to every one), and one round trip fewer is ~1 ms of every OpenSession. When
        one fails, the warning is the first failure in the order the calls were made."""
        try:
            opened, listed = await asyncio.gather(
                self.deps.tools.open_session(self.session.id, self.session.workspace, self.deps.secret_env_names),
                self.deps.tools.list_tools(self.session.id), return_exceptions=True)
            if isinstance(opened, BaseException):
                raise opened
            if isinstance(listed, BaseException):
                raise listed
            warnings, remote = opened, listed
        except Exception as exc:  # the adapter raises one readable line
            self.tool_warnings = [("tools", f"tools unavailable: {exc}")]
            self.warnings.append(self.tool_warnings[0][1])
            return
        self.tools_attached = True
        self.tool_warnings = [("sandbox", w) for w in warnings]
        self.warnings += warnings
        self.tools.set_remote(remote)

    async def opened(self) -> None:
        """The session is open and its tools attached: tell the features."""
        for feature in self.features:
            await feature.opened()

    @property
    def idle(self) -> bool:
        """No turn running and none queued."""
        return self.task is None

    @property
    def quiet(self) -> bool:
        """Idle, and no feature's work runs between turns (a background subagent): nothing more to follow."""
        return self.idle and not any(feature.busy() for feature in self._may_be_busy)

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
        self._queue((text, images), text)

    def enqueue(self, label: str, run: Callable[[int], Awaitable[None]]) -> None:
        """Run a feature's ``run(turn number)`` as a turn now, or queue it (shown as ``label``)."""
        self._queue(QueuedRun(label, run), label)

    def _queue(self, entry: tuple[str, tuple[InputFile, ...]] | QueuedRun, label: str) -> None:
        self.queue.append(entry)
        if self.task is None:
            self.task = asyncio.create_task(self._drain())
        else:
            turn = self.turn.number if self.turn else self.session.turns
            self.events.emit(turn, InputQueued(input=label, position=len(self.queue)))

    async def _drain(self) -> None:
        try:
            while self.queue:
                entry = self.queue.popleft()
                self.session.turns += 1
                for feature in self.features:
                    feature.turn_starting(self.session.turns)
                if isinstance(entry, QueuedRun):
                    await entry.run(self.session.turns)
                    continue
                text, images = entry
                self.turn = Turn(self.turn_context(), text, self.session.turns, images)
                await self.turn.run()
                for feature in self.features:
                    feature.after_turn()
        except Exception as exc:
            log.exception("turn of session %s crashed", self.session.id)
            if self.turn is not None:
                self.turn.crashed(exc)
        finally:
            self.turn = None
            self.task = None
            self.events.wake()

    # -- client messages --

    def interrupt(self, scope: InterruptScope) -> bool:
        """Cancel the running batch (``batch``) or the whole turn (``turn``)."""
        turn = self.turn
        if turn is None or self.task is None:
            return False
        if scope is InterruptScope.BATCH:
            if turn.batch_task is None:
                return False
            turn.batch_task.cancel()
            return True
        turn.stop_reason = "interrupted"
        self.task.cancel()
        return True

    def answer_approval(self, request_id: str, decision: Decision | None) -> bool:
        """Settle an approval (the turn's or a feature's); a malformed answer (None) counts as deny."""
        resolution = (Resolution(request_id, Decision.DENY, source="malformed") if decision is None
                      else Resolution(request_id, decision, source="user"))
        if self.turn is not None and self.turn.pending.resolve(resolution):
            return True
        return any(feature.resolve(resolution) for feature in self.features)

    def answer_question(self, request_id: str, answer: str) -> bool:
        return self._settle(RequestKind.QUESTION, Resolution(request_id, Decision.ALLOW_ONCE, answer=answer,
                                                             source="user"))

    def answer_buffer(self, request_id: str, text: str | None) -> bool:
        """Settle a BufferRequested with the editor's text (None: it has none; the disk text stands)."""
        return self._settle(RequestKind.BUFFER, Resolution(request_id, Decision.DENY, source="editor") if text is None
                            else Resolution(request_id, Decision.ALLOW_ONCE, answer=text, source="editor"))

    def _settle(self, kind: RequestKind, resolution: Resolution) -> bool:
        """Resolve the running turn's request of ``kind`` (an answer of another kind settles nothing)."""
        turn = self.turn
        return (turn is not None and turn.pending.kind(resolution.request_id) == kind
                and turn.pending.resolve(resolution))

    async def stop(self, reason: str) -> None:
        """End a running turn with ``reason`` (service shutdown) and save."""
        self.queue.clear()
        for feature in reversed(self.features):
            await feature.shutdown()
        task, turn = self.task, self.turn
        if task is not None and turn is not None:
            turn.stop_reason = reason
            task.cancel()
            await asyncio.wait({task}, timeout=5.0)
        self.persist_for_good()

    def persist_for_good(self) -> None:
        """Fold the session into one snapshot and close its files (it leaves memory); one never saved
        and without a message leaves no file."""
        if self.session.messages or self.store.written(self.session.id):
            self.store.compact(self.session)
        self.store.close(self.session.id)

    def rewind_conversation(self, point: RewindPoint, task_state: dict[str, Any]) -> int:
        """Take the idle session back to the end of turn ``point.turn`` (messages, todos, turn count, loaded
        tools, every feature's state) and save; usage, session grants and event numbers stay. Returns how
        many messages were dropped."""
        if not self.idle:
            raise BadRequest("a turn is running", hint="Rewind when it has ended (or interrupt it first).")
        session = self.session
        dropped = max(0, len(session.messages) - point.messages)
        del session.messages[point.messages:]
        session.task_state = TaskState.from_json(task_state) if task_state else TaskState()
        session.turns = point.turn
        session.harvest_cursor = min(session.harvest_cursor, point.messages)
        self.tools.rewind_to(point.turn)
        for feature in self.features:
            feature.rewind(session, point)
        self.save()
        return dropped

    def _reserve_seq(self, mark: int) -> None:
        try:
            self.store.reserve_seq(self.session.id, mark)
        except OSError as err:  # the turn goes on; a crash now could make a restarted loop reuse numbers
            log.error("reserving event numbers for session %s failed: %s", self.session.id, err)

    def save(self) -> None:
        """Persist the session; a failing disk degrades (an event) instead of ending the turn."""
        self.session.last_seq = self.events.last_seq
        running = self.turn
        self.session.open_turn = open_turn_mark(running.number, running.iterations) \
            if running is not None and not running.finished else {}
        for feature in self.features:
            feature.before_save()
        try:
            self.store.save(self.session)
        except OSError as err:
            log.error("saving session %s failed: %s", self.session.id, err)
            turn = self.turn.number if self.turn else self.session.turns
            self.events.emit(turn, Degraded(component="session_save", reason=str(storage_error(err, self.store.dir))))

    def end_of_turn(self) -> None:
        self.tools.turn_ended(self.session.turns)
        try:
            self.store.maybe_compact(self.session)
        except OSError as err:
            log.error("compacting session %s failed: %s", self.session.id, err)
        for feature in self.features:
            feature.turn_ended()
