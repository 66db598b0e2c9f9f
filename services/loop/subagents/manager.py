"""The ``subAgent`` tool of one session: foreground and background child runs.

A session owns one ``SubagentManager`` (the subagents feature builds it and registers
``tool_defs()``). Every run takes a slot of the ``max_parallel_subagents`` capacity; a full
capacity is an immediate tool error, never a silent queue. A foreground call waits for its
child and returns the packet; a background call returns the run id at once, and the end
arrives as a ``background_task_done`` event in the originating session plus a row of the runs
table (``runs.RunsTable``), never as a second tool message.

Seam for hooks (``subagent.start`` / ``subagent.end``): ``hooks`` holds ``SubagentHook``
objects; ``before_start`` may refuse a run (its reason is the tool error), ``after_end`` sees
the packet.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

from services.kernel.errors import AiCodingError
from services.loop.core.domain import ToolCall, ToolOutcome
from services.loop.core.ports import ModelClient, ToolContext, ToolDef
from services.loop.core.turn_events import (
    Degraded,
    EventBody,
    SubagentFinished,
    SubagentScope,
    SubagentStarted,
    SubagentTaskDone,
    TurnFinished,
)
from services.loop.policy.codes import ErrorCode
from services.loop.policy.permissions import Level
from services.loop.subagents import worktree
from services.loop.subagents.child import (
    ChildHost,
    ParentView,
    changed_files,
    child_settings,
    denied_calls,
    elapsed_ms,
    new_turn,
)
from services.loop.subagents.contract import (
    APPLY_DESCRIPTION,
    SUBAGENT_DESCRIPTION,
    ApplyArgs,
    SchemaRefused,
    SubAgentArgs,
    check_schema,
    parse_facts,
    schema_instructions,
)
from services.loop.subagents.ending import broken_end
from services.loop.subagents.held import apply_holding_back, held_note
from services.loop.subagents.packet import (
    FINAL_TEXT_CHARS,
    PacketStatus,
    SubagentPacket,
    packet_summary,
    status_of_turn,
    task_label,
    usage_dict,
)
from services.loop.subagents.records import (
    RUNNING_DIR,
    clear_marker,
    collect_lost,
    mark_running,
    write_transcript,
)
from services.loop.subagents.runs import MAX_ROWS, RunRecord, RunsTable, SubagentHook, SubagentLimits
from services.loop.tools.args import define
from services.loop.turn.pipeline import Turn

__all__ = ["MAX_ROWS", "RUNNING_DIR", "RunRecord", "SubagentHook", "SubagentLimits", "SubagentManager"]

log = logging.getLogger("ai_coding.loop")

# A foreground child ends this long before its parent's clock, so its packet still reaches the parent.
PARENT_MARGIN_S = 2.0

class SubagentManager:
    """The runs of one session."""

    def __init__(self, session_id: str, workspace: str, parent: Callable[[], ParentView],
                 emit: Callable[[EventBody, SubagentScope | None], None], limits: Callable[[], SubagentLimits],
                 model_for: Callable[[str], ModelClient] | None = None) -> None:
        self.session_id = session_id
        self.workspace = workspace
        self._parent = parent
        self._emit = emit
        self._limits = limits
        self._model_for = model_for
        self.table = RunsTable(collect_lost(workspace, session_id))
        self.hooks: list[SubagentHook] = []

    # -- the tool --

    def tool_defs(self) -> list[ToolDef]:
        return [define("subAgent", SUBAGENT_DESCRIPTION, SubAgentArgs, self.handle, permission=Level.ALLOW),
                define("subagent_apply", APPLY_DESCRIPTION, ApplyArgs, self.apply_handle, permission=Level.WARN,
                       deferred=True)]

    async def handle(self, ctx: ToolContext, call: ToolCall, args: SubAgentArgs) -> ToolOutcome:
        task = args.task
        if not task.strip():
            raise ValueError("subAgent needs 'task': a non-empty string saying what the child must do")
        schema: dict[str, Any] | None = None
        if args.output_schema is not None:
            try:
                schema = check_schema(args.output_schema)
            except SchemaRefused as err:
                return ToolOutcome.error(call.id, call.name, err.code, str(err))
        only = args.tools
        view = self._parent()
        model_name = args.model
        if model_name and self._model_for is not None:
            try:
                view.model = self._model_for(model_name)
            except AiCodingError as err:
                return ToolOutcome.error(call.id, call.name, ErrorCode.UNKNOWN_MODEL, f"{err}; omit 'model' to use this one")
        limits = self._limits()
        running = self.table.running_count()
        if running >= limits.max_parallel:
            return ToolOutcome.error(call.id, call.name, ErrorCode.SUBAGENT_CAPACITY,
                                 f"{running} subagent(s) already run (max_parallel_subagents={limits.max_parallel}); "
                                 "wait for one to finish (/tasks) or do this step yourself")
        name = (args.name or "").strip()[:60] or task_label(task)
        run = RunRecord(_new_run_id(), name, task.strip(), bool(args.background), call.id)
        for hook in self.hooks:
            reason = hook.before_start(run)
            if reason:
                return ToolOutcome.error(call.id, call.name, ErrorCode.SUBAGENT_REFUSED, reason)
        text = task.strip()
        if args.context and args.context.strip():
            text += f"\n\nContext from the agent that delegated this:\n{args.context.strip()}"
        if schema is not None:
            text += "\n\n" + schema_instructions(schema)
        timeout = limits.timeout_seconds
        if not run.background:
            left = ctx.remaining() - PARENT_MARGIN_S
            timeout = min(timeout, left) if timeout > 0 else left
            timeout = max(timeout, 1.0) if timeout != float("inf") else 0.0
        settings = child_settings(view.settings, timeout, limits.max_iterations, limits.token_budget)
        isolation = args.isolation
        may_write = only is None or bool({"write", "edit", "bash"} & set(only))
        isolate = isolation == "worktree" or (isolation is None and limits.isolation and may_write)

        def host_for(workspace: str) -> ChildHost:
            return ChildHost(run.run_id, view, settings, lambda body: self._emit(body, run.scope()),
                             only_tools=list(only) if only is not None else None, workspace=workspace)

        self.table.add(run)
        run.task_handle = asyncio.create_task(self._run(run, host_for, isolate, text, schema))
        if run.background:
            mark_running(self.workspace, self.session_id, run)
            return ToolOutcome(call.id, call.name, True,
                               json.dumps({"run_id": run.run_id, "name": run.name, "status": "running",
                                           "background": True,
                                           "note": "the result arrives later as an event; /tasks lists runs"}),
                               data={"run_id": run.run_id, "background": True})
        try:
            packet = await asyncio.shield(run.task_handle)
        except asyncio.CancelledError:
            self.table.stop(run.run_id)
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await run.task_handle
            raise
        return packet.outcome(call.id)

    async def _run(self, run: RunRecord, host_for: Callable[[str], ChildHost], isolate: bool, text: str,
                   schema: dict[str, Any] | None) -> SubagentPacket:
        """The child's whole run; whatever raises inside it, the run ends with a final state (it never
        stays ``running``, holding a ``max_parallel_subagents`` slot) and the parent gets the cause."""
        started = time.monotonic()
        try:
            return await self._run_child(run, host_for, isolate, text, schema, started)
        except asyncio.CancelledError:
            if not run.finished:
                self._end_broken(run, PacketStatus.CANCELLED, "the run was cancelled", started)
            raise
        except Exception as exc:
            log.exception("subagent %s failed outside its turn", run.run_id)
            return self._end_broken(run, PacketStatus.FAILED, f"{type(exc).__name__}: {exc}"[:300], started)

    def _end_broken(self, run: RunRecord, status: PacketStatus, reason: str, started: float) -> SubagentPacket:
        packet, event = broken_end(run.run_id, run.name, status, reason, elapsed_ms(started), run.isolation_note)
        run.packet, run.status, run.ended = packet, status, time.time()
        with contextlib.suppress(Exception):  # the state above is what matters; the rest is best effort
            self._emit(event, run.scope())
            if run.background:
                clear_marker(self.workspace, run.run_id)
        return packet

    async def _run_child(self, run: RunRecord, host_for: Callable[[str], ChildHost], isolate: bool, text: str,
                         schema: dict[str, Any] | None, started: float) -> SubagentPacket:
        stopped_early = False
        try:
            run.tree = await self._isolate(run) if isolate else None
        except asyncio.CancelledError:  # /tasks stop while the worktree was being made
            stopped_early = True
            run.tree = None
        host = host_for(run.tree.workspace if run.tree is not None else self.workspace)
        self._emit(SubagentStarted(run_id=run.run_id, name=run.name, task=run.task, background=run.background,
                                   call_id=run.call_id, workspace=host.workspace), run.scope())
        turn = new_turn(host, text)
        run.turn = turn
        try:
            if stopped_early:
                turn.stop_reason = "interrupted"
                turn.crashed(RuntimeError("stopped before it started"))
            else:
                await turn.run()
        except asyncio.CancelledError:
            if not turn.finished:
                turn.crashed(RuntimeError("cancelled"))
        except Exception as exc:  # a child's bug ends the child, never the parent
            log.exception("subagent %s crashed", run.run_id)
            turn.crashed(exc)
        finally:
            await host.close()
        packet = self._packet(run, host, turn, started, schema)
        await self._settle_tree(run, packet)
        run.packet, run.status, run.ended, run.tokens = packet, packet.status, time.time(), host.usage.total_tokens
        packet.transcript_path = write_transcript(self.workspace, self.session_id, run, host.messages, packet)
        self._emit(SubagentFinished(run_id=run.run_id, name=run.name, status=packet.status,
                                    truncated=packet.truncated, exit_reason=packet.exit_reason, usage=host.usage,
                                    elapsed_ms=packet.elapsed_ms,
                                    packet_json=json.dumps(packet.to_json(), ensure_ascii=False)), run.scope())
        for hook in self.hooks:
            try:
                hook.after_end(run, packet)
            except Exception:  # a hook's failure is its own
                log.exception("subagent end hook failed")
        if run.background:
            clear_marker(self.workspace, run.run_id)
            self._emit(SubagentTaskDone(run_id=run.run_id, name=run.name, status=packet.status,
                                        summary=packet_summary(packet), elapsed_ms=packet.elapsed_ms, usage=host.usage,
                                        origin_session_id=self.session_id,
                                        transcript_path=packet.transcript_path), None)
        return packet

    def _packet(self, run: RunRecord, host: ChildHost, turn: Turn, started: float,
                schema: dict[str, Any] | None) -> SubagentPacket:
        ends = [e for e in host.events if isinstance(e, TurnFinished)]
        turn_status = turn.status.value if turn.status is not None else "failed"
        status = status_of_turn(turn.status)
        if run.stopping or turn.stop_reason == "interrupted":
            status = PacketStatus.CANCELLED
        final = turn.final_text or (ends[-1].handoff if ends else "")
        packet = SubagentPacket(
            run_id=run.run_id, name=run.name, status=status,
            truncated=status.truncated,
            exit_reason=(ends[-1].reason if ends else "") or ("" if status is PacketStatus.COMPLETED else turn_status),
            usage=usage_dict(host.usage), final_text=final[:FINAL_TEXT_CHARS],
            files_changed=changed_files(turn), iterations=turn.iterations, elapsed_ms=elapsed_ms(started),
            denied_calls=denied_calls(turn), workspace=host.workspace)
        if schema is not None:
            result = parse_facts(turn.final_text, schema)
            packet.facts, packet.schema_valid, packet.schema_errors = result.facts, result.valid, result.errors
        return packet

    # -- worktrees --

    async def _isolate(self, run: RunRecord) -> worktree.Worktree | None:
        """A worktree for the child, or None (shared workspace) with a Degraded event saying why."""
        try:
            return await worktree.create(self.workspace, run.run_id)
        except worktree.IsolationUnavailable as err:
            run.isolation_note = f"shared workspace: {err}"
            self._emit(Degraded(component="subagent_worktree", reason=f"{err}; the child works in the shared "
                                                                       "workspace"), run.scope())
            return None

    async def _settle_tree(self, run: RunRecord, packet: SubagentPacket) -> None:
        """Commit the child's work on its branch; no change removes the worktree, changes stay for apply."""
        packet.isolation = "worktree" if run.tree is not None else "shared"
        packet.isolation_note = run.isolation_note
        tree = run.tree
        if tree is None:
            return
        try:
            changes = await worktree.commit(tree)
        except (RuntimeError, worktree.IsolationUnavailable) as err:
            packet.isolation_note = f"could not collect the child's changes: {err}"
            return
        packet.files_changed = changes.files
        if not changes.files:
            await worktree.remove(tree)
            run.tree = None
            return
        packet.worktree = {"path": str(tree.path), "branch": tree.branch, "base": tree.base,
                           "diff_stat": changes.stat,
                           "apply": f"call subagent_apply with run_id {run.run_id} to apply these changes to your tree"}

    async def apply_handle(self, ctx: ToolContext, call: ToolCall, args: ApplyArgs) -> ToolOutcome:
        """``subagent_apply``: the child's diff into the parent's tree, all or nothing."""
        run_id = args.run_id
        if not run_id:
            raise ValueError("subagent_apply needs 'run_id': the id from the subAgent packet")
        named = [r for r in self.table.runs.values() if r.name == run_id and r.tree is not None]
        run = self.table.runs.get(run_id) or self.table.find(run_id) or (named[-1] if len(named) == 1 else None)
        if run is None or run.tree is None or not run.finished:
            why = ("it is still running" if run is not None and not run.finished else
                   "it has no worktree changes to apply (none made, already applied, or from before a restart)")
            return ToolOutcome.error(call.id, call.name, ErrorCode.NOTHING_TO_APPLY, f"run {run_id}: {why}")
        try:
            files, held = await apply_holding_back(run.tree)
        except worktree.ApplyRefused as err:
            paths = f" (clashing: {', '.join(err.paths)})" if err.paths else ""
            return ToolOutcome.error(call.id, call.name, ErrorCode.APPLY_CONFLICT,
                                 f"{err}{paths}; nothing was applied. Your tree changed where the child worked: "
                                 "read the files and make the change yourself")
        except RuntimeError as err:
            return ToolOutcome.error(call.id, call.name, ErrorCode.APPLY_FAILED, f"{err}; nothing was applied")
        tree, run.tree = run.tree, None
        await worktree.remove(tree, keep_branch=bool(held))  # what was held back stays on the branch
        return ToolOutcome(call.id, call.name, True, f"applied the changes of {run.run_id} to {len(files)} file(s): "
                           + ", ".join(files) + held_note(held, tree.branch, tree.base),
                           data={"files": files, "run_id": run.run_id, "held": [h.path for h in held]})

    async def clean_orphans(self) -> list[str]:
        """Worktrees a crashed loop left in this workspace (run at session start)."""
        try:
            return await worktree.clean_orphans(self.workspace)
        except (RuntimeError, worktree.IsolationUnavailable, OSError) as err:
            log.warning("cleaning orphaned subagent worktrees in %s failed: %s", self.workspace, err)
            return []

    async def shutdown(self) -> None:
        await self.table.stop_all()


def _new_run_id() -> str:
    """Short and random (not time-ordered), so a few characters of it name a run in /tasks stop."""
    return f"sa-{secrets.token_hex(4)}"
