"""The line a user sees for a nudge the harness gives the model."""

from __future__ import annotations

from services.loop.policy.nudges import shown_nudge


def test_a_nudge_is_shown_as_its_first_sentence_on_one_line() -> None:
    nudge = "[continue] Your last answer was cut off at the output token limit. Continue exactly where it stopped."
    assert shown_nudge(nudge) == "[continue] Your last answer was cut off at the output token limit."
    assert shown_nudge("[x] a\nb c") == "[x] a b c"


def test_a_long_first_sentence_is_cut_with_a_mark() -> None:
    shown = shown_nudge("[strategy-gate] " + "word " * 100, limit=60)
    assert len(shown) == 60 and shown.endswith("…")
