"""The pure part of the acceptance gate: what a failed proof tells the model and the turn's end.

``policy.turn.decide`` reads the gate's verdicts as facts (``Facts.gate_checked``,
``Facts.gate_failures``) and uses these to word its nudge and its reason.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_GATE_NUDGES = 2
"""`[acceptance-gate]` nudges per turn (the gate's own budget, apart from `[continue]`)."""
NUDGE_TAIL_CHARS = 1500
"""Output shown per failing proof in the nudge (the end of it: where test runners say what failed)."""


@dataclass(frozen=True)
class GateFailure:
    """One proof that did not pass."""

    item_id: str
    statement: str
    command: str
    exit_code: int
    output_tail: str = ""
    error: str = ""

    def verdict(self) -> str:
        """``exited 1`` / ``timed out`` / ...: what happened to the proof, in words."""
        words = {"timeout": "timed out", "denied": "was refused by the permission gate",
                 "gate_budget": "did not run (the gate's time was used up)",
                 "tools_unavailable": "could not run (the tools service is unavailable)"}
        return words.get(self.error, f"exited {self.exit_code}")


def gate_nudge(failures: list[GateFailure]) -> str:
    """The `[acceptance-gate]` message appended to the history with the failing output."""
    parts = [f"[acceptance-gate] You stopped, but {len(failures)} acceptance proof(s) still fail. Fix the work "
             "so that each proof passes (do not change the proof), then finish again."]
    for f in failures:
        tail = f.output_tail[-NUDGE_TAIL_CHARS:].strip() or "(no output)"
        parts.append(f"- {f.item_id} \"{f.statement}\": `{f.command}` {f.verdict()}\n{tail}")
    return "\n".join(parts)


def failure_reason(failures: list[GateFailure]) -> str:
    """The turn's reason when it ends with proofs failing: names the (first) failing command."""
    first = failures[0]
    more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
    return f"acceptance failed: `{first.command}` {first.verdict()}{more}"
