"""Receipt grades, the saved plan record, and the workspace gate of /plan (pure)."""

from __future__ import annotations

import pytest

from services.loop.plans.paths import outside_workspace_paths
from services.loop.plans.receipts import (
    ProofGrade,
    Receipt,
    ReceiptOutcome,
    grade,
    plan_record,
    receipt_from_json,
    report_text,
    saved_receipts,
)


@pytest.mark.parametrize(("outcome", "verify", "verdicts", "attested", "want"), [
    ("done", "pytest -q", [False, True], True, "verified"),  # repaired: its final verdict passed
    ("done", "pytest -q", [], True, "on-claim"),  # a verify that never ran proves nothing
    ("done", "pytest -q", [True, False], True, "on-claim"),
    ("done", "", [], True, "on-claim"),
    ("done", "", [], False, "fiat"),
    ("blocked", "pytest -q", [False, False], True, "n/a"),
    ("stalled", "", [], True, "n/a"),
    ("open", "", [], True, "n/a"),
])
def test_the_grade_follows_the_verdicts_not_the_presence_of_a_verify(
        outcome: str, verify: str, verdicts: list[bool], attested: bool, want: str) -> None:
    assert grade(ReceiptOutcome(outcome), verify, verdicts, attested) is ProofGrade(want)


def test_a_saved_receipt_reads_back_as_enums_and_one_with_an_unknown_outcome_or_grade_is_skipped() -> None:
    raw = {"index": 1, "total": 1, "item_id": "1", "content": "a", "outcome": "done", "grade": "fiat"}
    back = receipt_from_json(raw)
    assert back is not None and back.outcome is ReceiptOutcome.DONE and back.grade is ProofGrade.FIAT
    assert receipt_from_json({**raw, "outcome": "finished"}) is None
    assert receipt_from_json({**raw, "grade": "proven"}) is None


def test_receipts_of_items_no_longer_on_the_list_are_dropped_and_broken_ones_skipped() -> None:
    kept = Receipt(1, 2, "1", "a", "done", "verified")
    gone = Receipt(2, 2, "2", "b", "stalled", "n/a")
    record = plan_record("g", [kept, gone])
    record["receipts"].append({"no": "id"})
    assert [r.item_id for r in saved_receipts(record)] == ["1", "2"]
    assert saved_receipts(record, {"1", "3"}) == [kept]


def test_the_report_names_every_item_without_proof() -> None:
    text = report_text("g", [Receipt(1, 3, "1", "a", "done", "verified"), Receipt(2, 3, "2", "b", "done", "fiat",
                                                                                 attested=False),
                             Receipt(3, 3, "3", "c", "blocked", "n/a", note="`make` exited 2")])
    assert text.splitlines()[0] == "[plan] report: 2/3 items done · goal: g"
    assert "3. c · blocked · proof: n/a · `make` exited 2" in text
    assert text.endswith("without proof: 2, 3")


@pytest.mark.parametrize(("text", "outside"), [
    ("summarize /etc/passwd", ["/etc/passwd"]),
    ("diff against ../other and ../other", ["../other"]),
    ("read ~/.ssh/config", ["~/.ssh/config"]),
    ("the a/../../b dir", ["a/../../b"]),
    ('open "/etc/shadow".', ["/etc/shadow"]),
    ("fix src/a.py and ./b/c.py, then docs/../README.md", []),
    ("see https://example.org/a/b and and/or", []),
    ("edit /w/proj/src/x.py", []),
])
def test_outside_workspace_paths_finds_what_leaves_the_workspace(text: str, outside: list[str]) -> None:
    assert outside_workspace_paths(text, "/w/proj") == outside
