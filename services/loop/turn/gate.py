"""The acceptance gate: run the proofs of items not yet passed, in the sandbox, like any bash call.

Each proof goes through the session's permission gate (a DENY fails it; items were approved
when added) and then to the tools service as a ``bash`` call, so it runs in the same
bubblewrap sandbox as the model's commands. 120 s per proof and 300 s for one check in all,
bounded by what the turn clock leaves; each verdict is an ``AcceptanceChecked`` event.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.kernel.ids import new_id
from services.loop.core.acceptance import AcceptanceItem
from services.loop.core.domain import ToolChunkEvent, ToolOutcome
from services.loop.core.ports import ToolDef, ToolRunner
from services.loop.core.turn_events import AcceptanceChecked, EventBody
from services.loop.policy.acceptance import GateFailure
from services.loop.policy.permissions import Level, Verdict

PROOF_TIMEOUT_S = 120.0
GATE_BUDGET_S = 300.0
OUTPUT_TAIL_CHARS = 2000
# A proof is not started with less than this left: it could not say anything useful.
MIN_PROOF_S = 1.0


@dataclass(frozen=True)
class ProofVerdict:
    """One proof's result."""

    item: AcceptanceItem
    exit_code: int
    passed: bool
    output_tail: str = ""
    error: str = ""
    duration_ms: float = 0.0

    def failure(self) -> GateFailure:
        return GateFailure(self.item.id, self.item.statement, self.item.command, self.exit_code, self.output_tail,
                           self.error)


@dataclass
class GateDeps:
    """What the gate needs from its turn."""

    session_id: str
    runner: ToolRunner
    permission: Callable[[ToolDef, dict[str, Any]], Verdict]
    emit: Callable[[EventBody], None]
    remaining: Callable[[], float]
    """Seconds left on the turn clock (math.inf: none)."""
    bash: ToolDef | None
    """The bash tool as the registry has it (None: the tools service is not attached)."""


async def check(items: list[AcceptanceItem], deps: GateDeps, *, proof_timeout: float = PROOF_TIMEOUT_S,
                budget: float = GATE_BUDGET_S) -> list[ProofVerdict]:
    """Run each item's proof in order; every verdict is emitted as it comes."""
    started = time.monotonic()
    verdicts = []
    for item in items:
        left = min(budget - (time.monotonic() - started), deps.remaining() - MIN_PROOF_S, proof_timeout)
        verdict = await _prove(item, deps, left)
        deps.emit(AcceptanceChecked(item_id=item.id, statement=item.statement, command=item.command,
                                    exit_code=verdict.exit_code, passed=verdict.passed,
                                    output_tail=verdict.output_tail, duration_ms=verdict.duration_ms,
                                    error=verdict.error))
        verdicts.append(verdict)
    return verdicts


async def _prove(item: AcceptanceItem, deps: GateDeps, seconds: float) -> ProofVerdict:
    if seconds < MIN_PROOF_S:
        return ProofVerdict(item, -1, False, "", "gate_budget")
    if deps.bash is None:
        return ProofVerdict(item, -1, False, "the tools service is not attached", "tools_unavailable")
    args: dict[str, Any] = {"command": item.command, "timeout_seconds": round(seconds, 1)}
    allowed = deps.permission(deps.bash, args)
    if allowed.level is Level.DENY:
        return ProofVerdict(item, -1, False, allowed.reason, "denied")
    began = time.monotonic()
    outcome: ToolOutcome | None = None
    async for event in deps.runner.call(deps.session_id, f"accept_{new_id()}", "bash", json.dumps(args),
                                        seconds + 10.0):
        if not isinstance(event, ToolChunkEvent):
            outcome = event
    elapsed = (time.monotonic() - began) * 1000.0
    if outcome is None or outcome.error_code == "tool_service_unavailable":
        return ProofVerdict(item, -1, False, outcome.error_message if outcome else "", "tools_unavailable", elapsed)
    tail = outcome.output[-OUTPUT_TAIL_CHARS:]
    if outcome.error_code == "tool_timeout":
        return ProofVerdict(item, -1, False, tail, "timeout", elapsed)
    code = outcome.data.get("exit_code")
    exit_code = code if isinstance(code, int) else (0 if outcome.ok else 1)
    return ProofVerdict(item, exit_code, outcome.ok and exit_code == 0, tail, "", elapsed)
