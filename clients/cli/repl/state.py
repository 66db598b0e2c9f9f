"""Pure decisions of the REPL: what a key or a line means in the current state."""

from __future__ import annotations

import base64
from dataclasses import dataclass

# Two Ctrl-C presses on an empty idle prompt within this many seconds exit.
DOUBLE_PRESS_SECONDS = 2.0

# Letters typed right after a one-key approval answer ("yes", "no", "always", "stop") finish
# the word the user was typing; they are not a message for the model.
ANSWER_TAIL_SECONDS = 2.0


def is_answer_tail(line: str, answer_key: str, seconds_since_answer: float) -> bool:
    """Whether ``line`` is the rest of a word whose first letter answered an approval just now."""
    word = answer_key + line.strip().lower()
    return (seconds_since_answer <= ANSWER_TAIL_SECONDS and bool(line.strip())
            and word in ("yes", "yep", "no", "nope", "always", "allow", "stop", "skip", "deny"))


def question_answer(line: str, options: list[str]) -> str:
    """A digit picks that option (1-based); any other text is the answer as typed."""
    text = line.strip()
    if text.isdigit() and 1 <= int(text) <= len(options):
        return options[int(text) - 1]
    return text


@dataclass(frozen=True)
class CtrlC:
    """What a Ctrl-C press does: ``abort_turn``, ``clear_line``, ``warn`` (press again to exit) or ``exit``."""

    action: str


def ctrl_c(*, turn_running: bool, line_empty: bool, now: float, last_press: float | None) -> CtrlC:
    """Ctrl-C aborts a running turn; on an idle prompt it clears the line, and twice on an empty one exits."""
    if turn_running:
        return CtrlC("abort_turn")
    if not line_empty:
        return CtrlC("clear_line")
    if last_press is not None and now - last_press <= DOUBLE_PRESS_SECONDS:
        return CtrlC("exit")
    return CtrlC("warn")


def osc52(text: str) -> str:
    """The OSC 52 sequence that puts ``text`` on the system clipboard of the terminal."""
    return "\x1b]52;c;" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "\x07"


def cycle_option(options: list[str], current: str, step: int) -> str:
    """The option after (``step`` 1) or before (-1) ``current``; from nothing, the first or the last."""
    if current in options:
        return options[(options.index(current) + step) % len(options)]
    return options[0] if step > 0 else options[-1]
