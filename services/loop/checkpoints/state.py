"""The feature's persisted state: which checkpoint came before which step of which turn."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from services.loop.core.feature import RewindPoint, StateSlot


@dataclass
class Step:
    """A changing tool call of a turn, and the checkpoint taken just before it."""

    turn: int
    step: int
    call_id: str
    tool: str
    checkpoint: str
    at: float
    after: str = ""
    """The checkpoint taken just after it (the tools service takes both)."""


@dataclass
class TurnMark:
    """A turn as a rewind sees it: its prompt and time, where its messages start, and its todo
    list at its end."""

    turn: int
    prompt: str
    at: float
    message_index: int
    task_state: dict[str, Any] = field(default_factory=dict)
    saved: dict[str, str] | None = None
    """Every other state slot at the turn's end: key -> digest of its raw JSON in
    ``CheckpointState.blobs`` (None: the turn ended before this was recorded, or has not ended)."""


@dataclass
class CheckpointState:
    steps: list[Step] = field(default_factory=list)
    turns: list[TurnMark] = field(default_factory=list)
    last_seen: str = ""
    """The latest checkpoint of the state the agent (or a rewind) left: what changed since is the user's."""
    redo: str = ""
    """The checkpoint taken just before the last rewind (restoring it is /redo)."""
    undone: list[int] = field(default_factory=list)
    """Turns /undo took back, last first out."""
    blobs: dict[str, Any] = field(default_factory=dict)
    """Slot values the turn marks name, by digest (a value unchanged over many turns is kept once)."""

    def keep_slots(self, slots: dict[str, Any]) -> dict[str, str]:
        """Record ``slots`` (key -> raw JSON) and return the digests a turn mark keeps."""
        out: dict[str, str] = {}
        for key, raw in slots.items():
            digest = hashlib.blake2b(json.dumps(raw, sort_keys=True, default=str).encode(), digest_size=12).hexdigest()
            self.blobs.setdefault(digest, raw)
            out[key] = digest
        return out

    def point(self, turn: int, messages: int, since: float) -> RewindPoint:
        """The rewind point of the end of ``turn`` (0: before the first), with the slots saved then."""
        mark = self.turn(turn)
        digests = (mark.saved or {}) if mark is not None else {}
        return RewindPoint(turn, messages, {key: self.blobs[d] for key, d in digests.items() if d in self.blobs}, since)

    def cut(self, turn: int) -> None:
        """Forget turns after ``turn``: their marks, steps, undo records and the slot values only they kept."""
        self.turns = [t for t in self.turns if t.turn <= turn]
        self.steps = [s for s in self.steps if s.turn <= turn]
        self.undone = [u for u in self.undone if u <= turn]
        used = {d for t in self.turns for d in (t.saved or {}).values()}
        self.blobs = {d: raw for d, raw in self.blobs.items() if d in used}

    def turn(self, number: int) -> TurnMark | None:
        return next((t for t in self.turns if t.turn == number), None)

    def steps_of(self, number: int) -> list[Step]:
        return [s for s in self.steps if s.turn == number]


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def decode(raw: Any) -> CheckpointState:
    """Tolerant of a corrupt record: what does not fit is dropped."""
    state = CheckpointState()
    if not isinstance(raw, dict):
        return state
    for s in raw.get("steps") or []:
        if isinstance(s, dict):
            state.steps.append(Step(_int(s.get("turn")), _int(s.get("step")), str(s.get("callId", "")),
                                    str(s.get("tool", "")), str(s.get("checkpoint", "")), float(s.get("at") or 0),
                                    str(s.get("after", ""))))
    for t in raw.get("turns") or []:
        if isinstance(t, dict):
            tasks, saved = t.get("taskState"), t.get("saved")
            state.turns.append(TurnMark(_int(t.get("turn")), str(t.get("prompt", "")), float(t.get("at") or 0),
                                        _int(t.get("messageIndex")), tasks if isinstance(tasks, dict) else {},
                                        {str(k): str(v) for k, v in saved.items()} if isinstance(saved, dict) else None))
    state.last_seen, state.redo = str(raw.get("lastSeen", "")), str(raw.get("redo", ""))
    state.undone = [u for u in raw.get("undone") or [] if isinstance(u, int)]
    return state


def encode(state: CheckpointState) -> Any:
    if not state.steps and not state.turns:
        return None
    return {
        "steps": [{"turn": s.turn, "step": s.step, "callId": s.call_id, "tool": s.tool, "checkpoint": s.checkpoint,
                   "at": s.at, "after": s.after} for s in state.steps],
        "turns": [{"turn": t.turn, "prompt": t.prompt, "at": t.at, "messageIndex": t.message_index,
                   "taskState": t.task_state, **({"saved": t.saved} if t.saved is not None else {})}
                  for t in state.turns],
        "lastSeen": state.last_seen, "redo": state.redo, "undone": state.undone,

    }


SLOT: StateSlot[CheckpointState] = StateSlot("checkpoints", decode, encode)
VALUES: StateSlot[dict[str, Any]] = StateSlot(
    "rewindValues", decode=lambda raw: dict(raw) if isinstance(raw, dict) else {},
    encode=lambda blobs: dict(blobs) or None)
"""``CheckpointState.blobs`` in a key of its own: it changes at turn ends only, so the journal
record of every step (which carries ``checkpoints``) does not repeat it (core/record.py)."""
