"""Pure decisions of /rewind, /undo and /redo: what a target means and what the user reads."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from services.loop.checkpoints.port import FileDelta, Restored
from services.loop.checkpoints.state import CheckpointState

USAGE = ("Use /rewind TURN[.STEP] [--code|--conversation] [--force]: TURN keeps turns 1..TURN (the code as it was "
         "at that turn's end), TURN.STEP the code just before that step; --force also overwrites files you "
         "changed since. /rewind alone lists the turns and steps.")


class RewindRefused(ValueError):
    """A rewind that cannot be done; the message says why and what to do."""


@dataclass(frozen=True)
class RewindAsk:
    turn: int
    step: int | None
    code: bool
    conversation: bool
    force: bool


def parse(args: str) -> RewindAsk | None:
    """``TURN[.STEP] [--code|--conversation|--both] [--force]``; None for no target (list them)."""
    words = args.split()
    targets = [w for w in words if not w.startswith("--")]
    flags = {w for w in words if w.startswith("--")}
    unknown = flags - {"--code", "--conversation", "--both", "--force"}
    if unknown:
        raise RewindRefused(f"unknown option {sorted(unknown)[0]}. {USAGE}")
    if not targets:
        return None
    match = re.fullmatch(r"(\d+)(?:\.(\d+))?", targets[0])
    if match is None or len(targets) > 1:
        raise RewindRefused(f"{' '.join(targets)!r} is not a turn. {USAGE}")
    both = "--both" in flags or {"--code", "--conversation"} <= flags
    code = both or "--conversation" not in flags
    conversation = both or "--code" not in flags
    step = int(match.group(2)) if match.group(2) else None
    if step is not None and not code:
        raise RewindRefused("a conversation rewinds to a whole turn; drop .STEP or add --code")
    return RewindAsk(int(match.group(1)), step, code, conversation and step is None, "--force" in flags)


def code_target(state: CheckpointState, turn: int, step: int | None) -> str:
    """The checkpoint a code rewind to ``turn`` (its end) or ``turn.step`` (just before it) restores."""
    if step is not None:
        steps = state.steps_of(turn)
        if not 1 <= step <= len(steps):
            raise RewindRefused(f"turn {turn} has {len(steps)} changing steps, not {step}; see /rewind")
        return steps[step - 1].checkpoint
    done = [s for s in state.steps if s.turn <= turn and s.after]
    if done:
        return done[-1].after
    first = next(iter(state.steps), None)
    if first is None:
        raise RewindRefused("no step of this session changed the workspace; nothing to rewind")
    return first.checkpoint  # before the agent's first change


def undo_target(state: CheckpointState) -> tuple[int, str] | None:
    """The last turn with changing steps that /undo has not taken back, and the checkpoint before it."""
    for mark in sorted(state.turns, key=lambda t: -t.turn):
        steps = state.steps_of(mark.turn)
        if steps and mark.turn not in state.undone:
            return mark.turn, steps[0].checkpoint
    return None


def delta_text(deltas: list[FileDelta]) -> str:
    if not deltas:
        return "no files changed"
    shown = ", ".join(f"{d.path} ({d.kind}{'' if d.binary else f' +{d.added} -{d.removed}'})" for d in deltas[:6])
    return shown + (f" and {len(deltas) - 6} more" if len(deltas) > 6 else "")


def report(what: str, restored: Restored, redo_hint: bool = True) -> str:
    """What a restore did, what it kept (named) and what it could not bring back (never silent)."""
    lines = [f"Rewound the code to {what}: {restored.written} paths restored, {restored.removed} removed."]
    if restored.kept:
        lines.append(f"Kept as you left them (changed since the agent's last step): {', '.join(restored.kept)}. "
                     "Add --force to overwrite them.")
    if restored.not_restorable:
        lines.append(f"Could not restore: {'; '.join(restored.not_restorable)}.")
    if redo_hint:
        lines.append("/redo re-applies what this took away.")
    return "\n".join(lines)


def plan_rollback(index: int, total: int, outcome: str, turn: int, first: int, count: int) -> str:
    """The offer after a /plan step that did not pass: how to take back the changes it made."""
    return (f"plan step {index}/{total} ended {outcome}: /rewind {turn}.{first} --code takes back the "
            f"{count} changing step{'s' if count != 1 else ''} it ran (files only; the plan's record stays)")


def clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))
