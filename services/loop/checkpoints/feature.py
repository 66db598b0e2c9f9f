"""The checkpoints session feature: which checkpoint belongs to which step, an end-of-turn
checkpoint after every turn, and /rewind, /undo, /redo, /checkpoints."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import grpc

from services.kernel.errors import reason_of
from services.loop.adapters.tools import GrpcToolRunner
from services.loop.checkpoints import rewind
from services.loop.checkpoints.grpc_port import GrpcCheckpoints
from services.loop.checkpoints.port import CheckpointPort, FileDelta
from services.loop.checkpoints.rewind import RewindRefused
from services.loop.checkpoints.state import SLOT, VALUES, Step, TurnMark
from services.loop.core.events import Event
from services.loop.core.feature import Command, Feature, FeatureHost, RewindPoint, StateSlot
from services.loop.core.sessions import Session, SessionStore
from services.loop.core.turn_events import (
    Notice,
    PlanStepReceipt,
    PlanStepStarted,
    ToolFinished,
    TurnStarted,
)

log = logging.getLogger("ai_coding.loop")


def _data(text: str, **data: Any) -> tuple[str, str]:
    return text, json.dumps(data)


class CheckpointsFeature(Feature):
    """Keeps ``checkpoints`` in the session record; restores only on the user's command."""

    name = "checkpoints"
    slots: tuple[StateSlot[Any], ...] = (SLOT, VALUES)

    def __init__(self, host: FeatureHost, port: CheckpointPort | None = None) -> None:
        super().__init__()
        self.host = host
        self.state = SLOT.read(host.session)
        self.state.blobs = VALUES.read(host.session)
        self.pruning: asyncio.Task[None] | None = None
        self.plan_step: tuple[int, int] | None = None
        """(turn, first step number) of the running /plan step."""
        runner = host.runner
        self.port: CheckpointPort | None = port or (GrpcCheckpoints(runner) if isinstance(runner, GrpcToolRunner)
                                                    else None)

    # -- what the session tells it --

    def on_event(self, event: Event) -> None:
        body = event.body
        if event.scope is not None:
            return
        if isinstance(body, TurnStarted):
            self.state.turns = [t for t in self.state.turns if t.turn != body.turn]
            self.state.turns.append(TurnMark(body.turn, body.input, event.ts, len(self.host.session.messages)))
        elif isinstance(body, ToolFinished) and isinstance(body.result.data.get("checkpoint"), str):
            after = body.result.data.get("checkpoint_after")
            self.state.steps.append(Step(event.turn, len(self.state.steps_of(event.turn)) + 1, body.result.call_id,
                                         body.result.tool, body.result.data["checkpoint"], event.ts,
                                         after if isinstance(after, str) else ""))
            if isinstance(after, str):
                self.state.last_seen = after
        elif isinstance(body, PlanStepStarted):
            self.plan_step = (event.turn, len(self.state.steps_of(event.turn)) + 1)
        elif isinstance(body, PlanStepReceipt) and body.outcome != "done" and self.plan_step is not None:
            turn, first = self.plan_step
            ran = [s for s in self.state.steps_of(turn) if s.step >= first]
            if ran and turn == event.turn:
                self.host.emit_now(Notice(level="info", text=rewind.plan_rollback(body.index, body.total,
                                                                                 body.outcome, turn, first, len(ran))))

    async def opened(self) -> None:
        """Checkpoints of the workspace's deleted sessions go with them (in the background: a sweep
        of a big store must not hold up the session's opening)."""
        if self.port is not None and self.pruning is None:
            self.pruning = asyncio.create_task(self._prune_orphans())

    async def _prune_orphans(self) -> None:
        assert self.port is not None
        session = self.host.session
        try:
            live = await asyncio.to_thread(SessionStore(session.workspace).ids)
            dropped = await self.port.prune_orphans(session.id, live)
        except (grpc.RpcError, OSError) as err:
            log.info("checkpoints: pruning the deleted sessions' checkpoints failed: %s", err)
            return
        if dropped:
            log.info("checkpoints: dropped %d checkpoints of deleted sessions of %s", dropped, session.workspace)

    async def shutdown(self) -> None:
        if self.pruning is not None and not self.pruning.done():
            self.pruning.cancel()

    def turn_ended(self) -> None:
        """Record the turn's end: its todo list and every other slot as saved (what a rewind restores)."""
        mark = max(self.state.turns, key=lambda t: t.turn, default=None)
        if mark is not None:
            session = self.host.session
            mark.task_state = session.task_state.to_json()
            mark.saved = self.state.keep_slots({k: v for k, v in session.slots.items()
                                                if k not in (SLOT.key, VALUES.key)})

    def rewind(self, session: Session, point: RewindPoint) -> None:
        self.state.cut(point.turn)

    def before_save(self) -> None:
        SLOT.write(self.host.session, self.state)
        VALUES.write(self.host.session, self.state.blobs)

    # -- the user's commands --

    def commands(self) -> dict[str, Command]:
        return {"rewind": self.rewind_command, "undo": self.undo, "redo": self.redo, "checkpoints": self.listing}

    def _refusal(self) -> tuple[str, str] | None:
        if self.port is None:
            return _data("checkpoints need the tools service; this session has none", error="no_checkpoints")
        if not self.host.idle:
            return _data("a turn is running; rewind when it has ended (or interrupt it first)", error="busy")
        return None

    async def _restore(self, checkpoint: str, what: str, force: bool) -> tuple[str, str]:
        assert self.port is not None
        sid = self.host.session.id
        try:
            restored = await self.port.restore(sid, checkpoint, self.state.last_seen, force)
            after = await self.port.create(sid, f"after rewind to {what}")
        except grpc.RpcError as err:
            return _data(f"the rewind failed: {err.details()}", error=reason_of(err) or "rpc_error")
        self.state.redo, self.state.last_seen = restored.redo_checkpoint_id, after
        self.host.save()
        return _data(rewind.report(what, restored), restored=checkpoint, redo=restored.redo_checkpoint_id,
                     kept=restored.kept, not_restorable=restored.not_restorable, written=restored.written,
                     removed=restored.removed)

    async def undo(self, args: str) -> tuple[str, str]:
        refused = self._refusal()
        if refused is not None:
            return refused
        found = rewind.undo_target(self.state)
        if found is None:
            return _data("Nothing to undo: no turn of this session changed the workspace.", error="nothing_to_undo")
        turn, checkpoint = found
        text, data = await self._restore(checkpoint, f"before turn {turn}", "--force" in args.split())
        if "redo" in json.loads(data):
            self.state.undone.append(turn)
            self.host.save()
        return text, data

    async def redo(self, args: str) -> tuple[str, str]:
        refused = self._refusal()
        if refused is not None:
            return refused
        if not self.state.redo:
            return _data("Nothing to redo: no rewind to take back.", error="nothing_to_redo")
        target = self.state.redo
        text, data = await self._restore(target, "where it was before the last rewind", "--force" in args.split())
        if "redo" in json.loads(data):
            if self.state.undone:
                self.state.undone.pop()
            self.state.redo = ""
            self.host.save()
            text = text.replace("/redo re-applies what this took away.", "/undo takes the turn back again.")
        return text, data

    async def rewind_command(self, args: str) -> tuple[str, str]:
        try:
            ask = rewind.parse(args)
        except RewindRefused as exc:
            return _data(str(exc), error="bad_target")
        if ask is None:
            return await self.listing("")
        refused = self._refusal()
        if refused is not None:
            return refused
        parts: list[str] = []
        data: dict[str, Any] = {}
        try:
            checkpoint = rewind.code_target(self.state, ask.turn, ask.step) if ask.code else ""
            if ask.conversation:
                self._check_conversation(ask.turn)
        except RewindRefused as exc:
            return _data(str(exc), error="bad_target")
        if ask.code:
            what = f"turn {ask.turn} step {ask.step} (just before it)" if ask.step else f"the end of turn {ask.turn}"
            text, raw = await self._restore(checkpoint, what, ask.force)
            parts.append(text)
            data.update(json.loads(raw))
            if "error" in data:
                return text, raw
        if ask.conversation:
            parts.append(self._rewind_conversation(ask.turn))
            data["conversation_turns"] = ask.turn
        return "\n".join(parts), json.dumps(data)

    def _check_conversation(self, turn: int) -> None:
        later = [t for t in self.state.turns if t.turn > turn]
        if not later:
            raise RewindRefused(f"the conversation is at turn {turn} already")
        mark = self.state.turn(turn)
        if mark is None and turn != 0:
            raise RewindRefused(f"there is no turn {turn} in this session; see /rewind")
        if mark is not None and mark.saved is None:
            raise RewindRefused(f"turn {turn} was recorded before conversation rewinds kept the session's state; "
                                "rewind the code only (--code)")

    def _rewind_conversation(self, turn: int) -> str:
        """Keep turns 1..``turn``: the session and every feature's state as they were at its end."""
        later = [t for t in self.state.turns if t.turn > turn]
        first = min(later, key=lambda t: t.message_index)
        mark = self.state.turn(turn)
        point = self.state.point(turn, first.message_index, first.at)
        dropped = self.host.rewind_conversation(point, mark.task_state if mark is not None else {})
        return f"Rewound the conversation to the end of turn {turn} ({dropped} later messages dropped)."

    async def _prune(self) -> tuple[str, str]:
        """Drop this session's checkpoints in the tools service's store (nothing can be rewound after)."""
        assert self.port is not None
        if not self.host.idle:
            return _data("a turn is running; prune when it has ended", error="busy")
        try:
            dropped = await self.port.prune(self.host.session.id)
        except grpc.RpcError as err:
            return _data(f"pruning failed: {err.details()}", error=reason_of(err) or "rpc_error")
        self.state.steps, self.state.redo, self.state.last_seen, self.state.undone = [], "", "", []
        self.host.save()
        return _data(f"Dropped this session's {dropped} checkpoints; its turns can no longer be rewound.",
                     dropped=dropped)

    async def listing(self, args: str) -> tuple[str, str]:
        """The session's turns and steps with time, prompt and files +/-, newest last."""
        if self.port is None:
            return _data("checkpoints need the tools service; this session has none", error="no_checkpoints")
        if args.strip() == "prune":
            return await self._prune()
        lines: list[str] = []
        rows: list[dict[str, Any]] = []
        turns: list[dict[str, Any]] = []
        for mark in sorted(self.state.turns, key=lambda t: t.turn):
            steps = self.state.steps_of(mark.turn)
            undone = " (undone)" if mark.turn in self.state.undone else ""
            lines.append(f"turn {mark.turn}{undone} · {rewind.clock(mark.at)} · {mark.prompt[:60]!r}")
            for step in steps:
                deltas = await self._diff(step.checkpoint, step.after)
                lines.append(f"  {mark.turn}.{step.step} · {rewind.clock(step.at)} · {step.tool} · "
                             f"{rewind.delta_text(deltas)}")
                rows.append({"turn": mark.turn, "step": step.step, "tool": step.tool, "checkpoint": step.checkpoint,
                             "at": step.at, "files": _files(deltas)})
            whole = await self._diff(steps[0].checkpoint, steps[-1].after) if steps else []
            turns.append({"turn": mark.turn, "at": mark.at, "prompt": mark.prompt, "undone": bool(undone),
                          "steps": len(steps), "conversation": mark.saved is not None, "files": _files(whole)})
        if not lines:
            return _data("No checkpoints yet: no turn of this session changed the workspace.", steps=[], turns=[])
        lines.append("Rewind with /rewind TURN[.STEP] [--code|--conversation]; /undo takes back the last turn.")
        return _data("\n".join(lines), steps=rows, turns=turns)

    async def _diff(self, before: str, after: str) -> list[FileDelta]:
        """What changed between two checkpoints ([] when one is missing: pruned, or the service is down)."""
        assert self.port is not None
        if not before or not after:
            return []
        try:
            return await self.port.diff(self.host.session.id, before, after)
        except grpc.RpcError:
            return []


def _files(deltas: list[FileDelta]) -> list[dict[str, Any]]:
    return [{"path": d.path, "kind": d.kind, "added": d.added, "removed": d.removed, "binary": d.binary}
            for d in deltas]
