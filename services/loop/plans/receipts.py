"""Plan receipts: what each item came to, its proof grade, and the plan's report.

Grades: ``verified`` (the item has a ``verify`` and every proof's final verdict passed:
the reader checks the verdicts, never only that a verify exists), ``on-claim`` (marked
done by the model, nothing to run), ``fiat`` (done during the planning turn: no step ran,
``attested`` false, zero cost), ``n/a`` (not done: blocked, stalled or left open).
Receipts are saved with the session (``Session.plan``) and replayed by /resume.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from typing import Any, assert_never

from services.loop.core.feature import StateSlot
from services.loop.core.turn_events import PlanStepReceipt


class ReceiptOutcome(StrEnum):
    """What a plan item came to (the value is the wire and saved form)."""

    DONE = "done"
    BLOCKED = "blocked"
    """Its step failed, or its verify failed after the repairs."""
    STALLED = "stalled"
    """Its step ended without the model marking it done."""
    OPEN = "open"
    """Not run (dropped, the step cap reached, the run ended first)."""


class ProofGrade(StrEnum):
    """How well a receipt's ``done`` is proved (the value is the wire and saved form)."""

    VERIFIED = "verified"
    ON_CLAIM = "on-claim"
    FIAT = "fiat"
    NOT_APPLICABLE = "n/a"


def grade(outcome: ReceiptOutcome, verify: str, verdicts: list[bool], attested: bool) -> ProofGrade:
    """The proof grade of an item's receipt."""
    match outcome:
        case ReceiptOutcome.BLOCKED | ReceiptOutcome.STALLED | ReceiptOutcome.OPEN:
            return ProofGrade.NOT_APPLICABLE
        case ReceiptOutcome.DONE:
            if not attested:
                return ProofGrade.FIAT
            if verify and verdicts and verdicts[-1] is True:
                return ProofGrade.VERIFIED
            return ProofGrade.ON_CLAIM
        case _:
            assert_never(outcome)


Receipt = PlanStepReceipt
"""An item's receipt is the event that reports it; the session saves its fields as JSON."""


def receipt_from_json(raw: Any) -> Receipt | None:
    """A saved receipt, or None when it is not one (no item id, unknown shape)."""
    if not isinstance(raw, dict) or not raw.get("item_id"):
        return None
    known = {f.name for f in fields(Receipt)}
    try:
        values = {k: v for k, v in raw.items() if k in known}
        values["outcome"] = ReceiptOutcome(str(values.get("outcome")))
        values["grade"] = ProofGrade(str(values.get("grade")))
        return Receipt(**values)
    except (TypeError, ValueError):  # a field missing or of another shape, an outcome or grade we do not know
        return None


def plan_record(goal: str, receipts: list[Receipt]) -> dict[str, Any]:
    """The session's ``plan`` object."""
    return {"goal": goal, "receipts": [asdict(r) for r in receipts]}


@dataclass(frozen=True)
class PlanRecord:
    """The session's last /plan run: its goal and receipts."""

    goal: str = ""
    receipts: tuple[Receipt, ...] = ()


PLAN = StateSlot[PlanRecord](
    "plan", decode=lambda raw: PlanRecord(str(raw.get("goal", "")), tuple(saved_receipts(raw))) if isinstance(
        raw, dict) else PlanRecord(),
    encode=lambda plan: plan_record(plan.goal, list(plan.receipts)) if plan.goal or plan.receipts else None)
"""The session's ``plan`` (saved only when a plan ran)."""


def saved_receipts(plan: dict[str, Any], item_ids: set[str] | None = None) -> list[Receipt]:
    """Receipts of the session's plan; with ``item_ids``, only those of items still on the list
    (rewriting the list drops the receipts of items no longer in it)."""
    out = [r for raw in plan.get("receipts") or [] if (r := receipt_from_json(raw)) is not None]
    return [r for r in out if item_ids is None or r.item_id in item_ids]


def unproven(receipts: list[Receipt]) -> list[str]:
    """Ids of items without proof (any grade but ``verified``)."""
    return [r.item_id for r in receipts if r.grade != ProofGrade.VERIFIED]


def report_text(goal: str, receipts: list[Receipt], refusal: str = "") -> str:
    """The plan's final report: one line per item, then every item without proof, by id."""
    done = sum(1 for r in receipts if r.outcome == ReceiptOutcome.DONE)
    lines = [f"[plan] report: {done}/{len(receipts)} items done · goal: {goal}"]
    if refusal:
        lines.append(f"  refused: {refusal}")
    for r in receipts:
        why = f" · {r.note}" if r.note else ""
        lines.append(f"  {r.item_id}. {r.content} · {r.outcome} · proof: {r.grade}{why}")
    missing = unproven(receipts)
    lines.append(f"  without proof: {', '.join(missing)}" if missing else "  every item is verified")
    return "\n".join(lines)
