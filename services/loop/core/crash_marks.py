"""A turn a crashed loop never finished, marked when its session is next opened.

While a turn runs, every save records ``openTurn`` (the turn and the step it is at) in the session's
meta; the turn's final save clears it. A session loaded with ``openTurn`` set lost that turn to a
crash (kill -9, OOM, power): its history gets one assistant note saying so, which the REPL's resume
view and ``sessions show`` print like any message, and OpenSession warns once.
"""

from __future__ import annotations

import time
from typing import Any

CRASH_NOTE_PREFIX = "[interrupted by a crash"


def open_turn_mark(number: int, iterations: int) -> dict[str, int]:
    """What a save records while turn ``number`` runs (its step is the one under way)."""
    return {"turn": number, "step": iterations + 1}


def crash_note(open_turn: dict[str, Any]) -> str:
    """The note for a turn a crash ended (``open_turn`` as saved)."""
    return (f"{CRASH_NOTE_PREFIX} at step {int(open_turn.get('step', 1))} of turn {int(open_turn.get('turn', 0))}: "
            "the loop stopped before the turn finished; what it had saved is above, the rest was lost]")


def mark_crashed_turn(messages: list[dict[str, Any]], open_turn: dict[str, Any]) -> str:
    """Append the note when ``open_turn`` is set; returns it ("" when nothing was open)."""
    if not open_turn:
        return ""
    note = crash_note(open_turn)
    messages.append({"role": "assistant", "content": note, "_ts": time.time()})
    return note


__all__ = ["CRASH_NOTE_PREFIX", "crash_note", "mark_crashed_turn", "open_turn_mark"]
