"""One approval-key table for ``run``'s prompt and the REPL's keys and lines."""

from __future__ import annotations

import pytest
from ai_coding.v1 import loop_pb2

from clients.cli import convert
from clients.cli.approvals import APPROVAL_KEYS, CHOICES, ONE_KEYS, approval_decision, is_approval_answer
from clients.cli.views import Decision


@pytest.mark.parametrize(("answer", "decision"), [
    ("y", Decision.ALLOW_ONCE), ("Y", Decision.ALLOW_ONCE), ("YES ", Decision.ALLOW_ONCE),
    ("a", Decision.ALLOW_ALWAYS), ("always", Decision.ALLOW_ALWAYS),
    ("n", Decision.DENY), ("no", Decision.DENY),
    ("s", Decision.STOP), ("stop", Decision.STOP),
    ("", Decision.DENY), ("sure why not", Decision.DENY), ("yolo", Decision.DENY),
])
def test_an_answer_means_its_decision_and_anything_unknown_or_enter_alone_denies(answer: str,
                                                                                decision: Decision) -> None:
    assert approval_decision(answer) == decision


def test_only_key_words_and_an_empty_line_count_as_an_answer() -> None:
    assert is_approval_answer("always") and is_approval_answer("  ") and is_approval_answer("S")
    assert not is_approval_answer("stop the build first")


def test_the_one_letter_keys_are_what_the_prompts_offer() -> None:
    assert ONE_KEYS == ("y", "a", "n", "s")
    assert CHOICES == "[y/a/n/s]"


def test_every_decision_a_key_means_travels_as_its_wire_value() -> None:
    wire = {convert.approval("r", decision).approval.decision for decision in set(APPROVAL_KEYS.values())}
    assert wire == {loop_pb2.APPROVAL_DECISION_ALLOW_ONCE, loop_pb2.APPROVAL_DECISION_ALLOW_ALWAYS,
                    loop_pb2.APPROVAL_DECISION_DENY, loop_pb2.APPROVAL_DECISION_STOP}
