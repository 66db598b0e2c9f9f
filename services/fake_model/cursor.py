"""Which scripted step answers the next request: steps are consumed in order, ``repeat`` times each."""

from __future__ import annotations

from dataclasses import dataclass

from services.fake_model.replies import Conversation, match_failure
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
    """The position in a script. Not thread-safe: the server calls it under its lock.

    In ``order: strict`` (the default) the next unused step must match; in
    ``order: first_match`` the first unused step whose ``match`` holds answers,
    for concurrent callers (subagents, parallel sessions) whose order varies.
    """

    def __init__(self, script: Script) -> None:
        self.script = script
        # Uses left per step; None: unbounded (repeat: forever).
        self.left: list[int | None] = [step.repeat for step in script.steps]

    @property
    def index(self) -> int:
        """The first step with uses left (``len(steps)`` once all are used)."""
        return next((i for i, left in enumerate(self.left) if left != 0), len(self.left))

    def remaining(self) -> int | None:
        """How many requests the rest of the script can answer (``None``: unbounded)."""
        if any(left is None for left in self.left):
            return None
        return sum(left or 0 for left in self.left)

    def take(self, seen: str | Conversation) -> Selected | Refused:
        """Consume one use of the step that answers the request; a refusal consumes nothing.

        ``seen`` is the request's ``Conversation`` (a bare string stands for every view of it).
        """
        last_message = seen.last if isinstance(seen, Conversation) else seen
        open_steps = [i for i, left in enumerate(self.left) if left != 0]
        if not open_steps:
            total = len(self.script.steps)
            return Refused("fake_script_exhausted",
                           f"fake model: the script is exhausted (all {total} step(s) were used); "
                           f"this request has no scripted reply. Last message: {last_message[:200]!r}")
        candidates = open_steps if self.script.order == "first_match" else open_steps[:1]
        for i in candidates:
            step = self.script.steps[i]
            if match_failure(step, step.label(i), seen) is None:
                left = self.left[i]
                self.left[i] = None if left is None else left - 1
                return Selected(step, i)
        first = self.script.steps[candidates[0]]
        failure = match_failure(first, first.label(candidates[0]), seen) or ""
        if len(candidates) > 1:
            failure += f" (order: first_match; no other unused step matched either: {len(candidates)} tried)"
        return Refused("fake_script_mismatch", failure)

    def give_back(self, index: int) -> None:
        """Return the use ``take`` just consumed of step ``index`` (the server refused the request after all)."""
        left = self.left[index]
        if left is not None:
            self.left[index] = left + 1
