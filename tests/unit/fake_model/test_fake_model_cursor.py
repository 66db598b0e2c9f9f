"""The script cursor: steps in order, repeat counts, mismatches consume nothing, exhaustion is explicit."""

from __future__ import annotations

from services.fake_model.cursor import Refused, ScriptCursor, Selected
from services.fake_model.script import parse_script


def test_steps_are_consumed_in_order_and_repeat_answers_several_requests() -> None:
    cursor = ScriptCursor(parse_script([{"text": "a", "repeat": 2}, {"text": "b"}]))
    answers = [cursor.take("") for _ in range(3)]
    assert [a.step.text for a in answers if isinstance(a, Selected)] == ["a", "a", "b"]
    assert [a.index for a in answers if isinstance(a, Selected)] == [0, 0, 1]


def test_a_mismatch_names_the_expected_substring_and_consumes_nothing() -> None:
    cursor = ScriptCursor(parse_script([{"name": "fix", "match": "calc.py", "text": "ok"}]))
    refused = cursor.take("something else entirely")
    assert isinstance(refused, Refused)
    assert refused.code == "fake_script_mismatch"
    assert "step 1 (fix)" in refused.message and "'calc.py'" in refused.message
    assert "something else entirely" in refused.message
    assert isinstance(cursor.take("please open calc.py"), Selected)


def test_every_substring_of_a_list_match_must_be_present() -> None:
    cursor = ScriptCursor(parse_script([{"match": ["alpha", "beta"]}]))
    refused = cursor.take("alpha only")
    assert isinstance(refused, Refused) and "'beta'" in refused.message
    assert isinstance(cursor.take("alpha and beta"), Selected)


def test_an_exhausted_script_refuses_with_its_own_code() -> None:
    cursor = ScriptCursor(parse_script([{"text": "only"}]))
    cursor.take("")
    refused = cursor.take("one more")
    assert isinstance(refused, Refused)
    assert refused.code == "fake_script_exhausted"
    assert "exhausted" in refused.message and "one more" in refused.message


def test_remaining_counts_repeats_and_is_unbounded_for_forever() -> None:
    cursor = ScriptCursor(parse_script([{"repeat": 3}, {"text": "x"}]))
    cursor.take("")
    assert cursor.remaining() == 3
    assert ScriptCursor(parse_script([{"repeat": "forever"}])).remaining() is None
    forever = ScriptCursor(parse_script([{"text": "again", "repeat": "forever"}]))
    assert all(isinstance(forever.take(""), Selected) for _ in range(50))


def test_first_match_order_lets_a_later_step_answer_when_its_match_fits() -> None:
    cursor = ScriptCursor(parse_script({"order": "first_match", "steps": [
        {"match": "parent", "text": "p"}, {"match": "child", "text": "c"}]}))
    child = cursor.take("child asks")
    parent = cursor.take("parent asks")
    assert isinstance(child, Selected) and child.step.text == "c"
    assert isinstance(parent, Selected) and parent.step.text == "p"
    assert cursor.remaining() == 0


def test_first_match_order_still_refuses_a_request_no_unused_step_matches() -> None:
    cursor = ScriptCursor(parse_script({"order": "first_match", "steps": [{"match": "a"}, {"match": "b"}]}))
    refused = cursor.take("neither")
    assert isinstance(refused, Refused) and refused.code == "fake_script_mismatch"
    assert "'a'" in refused.message and "2 tried" in refused.message
    assert cursor.remaining() == 2


def test_strict_order_refuses_a_later_step_even_when_it_would_match() -> None:
    cursor = ScriptCursor(parse_script([{"match": "first"}, {"match": "second"}]))
    assert isinstance(cursor.take("second"), Refused)
