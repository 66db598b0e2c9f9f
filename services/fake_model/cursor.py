"""Which scripted step answers the next request: steps are consumed in order, ``repeat`` times each."""

from __future__ import annotations

from dataclasses import dataclass

from services.fake_model.replies import match_failure
from services.fake_model.script import Script, Step


@dataclass(frozen=True)
class Selected:
    """The step chosen for a request and its 0-based index in the script."""

    step: Step
    index: int


@dataclass(frozen=True)
class Refused:
    """No step answers this request; ``code`` is ``fake_script_mismatch`` or ``fake_script_exhausted``."""

    code: str
    message: str


class ScriptCursor:
    """The position in a script. Not thread-safe: the server calls it under its lock."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.index = 0
        self.used = 0

    def remaining(self) -> int | None:
        """How many requests the rest of the script can answer (``None``: unbounded)."""
        total = 0
        for offset, step in enumerate(self.script.steps[self.index:]):
            if step.repeat is None:
                return None
            total += step.repeat - (self.used if offset == 0 else 0)
        return total

    def take(self, last_message: str) -> Selected | Refused:
        """Consume one use of the next step if its ``match`` holds; a mismatch consumes nothing."""
        if self.index >= len(self.script.steps):
            total = len(self.script.steps)
            return Refused("fake_script_exhausted",
                           f"fake model: the script is exhausted (all {total} step(s) were used); "
                           f"this request has no scripted reply. Last message: {last_message[:200]!r}")
        step = self.script.steps[self.index]
        failure = match_failure(step, step.label(self.index), last_message)
        if failure is not None:
            return Refused("fake_script_mismatch", failure)
        selected = Selected(step, self.index)
        self.used += 1
        if step.repeat is not None and self.used >= step.repeat:
            self.index += 1
            self.used = 0
        return selected
