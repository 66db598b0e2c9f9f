"""The script cursor: steps in order, repeat counts, mismatches consume nothing, exhaustion is explicit."""

from __future__ import annotations

from services.fake_model.cursor import Refused, ScriptCursor, Selected
from services.fake_model.replies import Conversation
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


def _request(*messages: tuple[str, str]) -> Conversation:
    return Conversation.of({"messages": [{"role": role, "content": text} for role, text in messages]})


def test_match_first_user_tells_a_childs_request_from_its_parents_when_last_messages_look_alike() -> None:
    cursor = ScriptCursor(parse_script({"order": "first_match", "steps": [
        {"match_first_user": "fix the build", "text": "parent"},
        {"match_first_user": "count the files", "text": "child"}]}))
    child = cursor.take(_request(("system", "fix the build"), ("user", "count the files"), ("tool", "ok")))
    parent = cursor.take(_request(("user", "fix the build"), ("tool", "ok")))
    assert isinstance(child, Selected) and child.step.text == "child"
    assert isinstance(parent, Selected) and parent.step.text == "parent"


def test_match_anywhere_looks_at_every_message_and_tool_call_arguments() -> None:
    body = {"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "calc.py"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1"}]}
    cursor = ScriptCursor(parse_script([{"match_anywhere": ["calc.py", "go"], "text": "seen"}]))
    assert isinstance(cursor.take(_request(("user", "go"), ("tool", "x = 1"))), Refused)
    assert isinstance(cursor.take(Conversation.of(body)), Selected)


def test_match_absent_refuses_a_request_that_contains_the_substring_and_names_it() -> None:
    cursor = ScriptCursor(parse_script([{"match_absent": "subagent finished", "text": "first pass"}]))
    refused = cursor.take(_request(("user", "go"), ("tool", "subagent finished: 3 files")))
    assert isinstance(refused, Refused) and refused.code == "fake_script_mismatch"
    assert "no message to contain 'subagent finished'" in refused.message
    assert isinstance(cursor.take(_request(("user", "go"))), Selected)


def test_a_first_user_mismatch_names_the_key_and_what_the_first_user_message_was() -> None:
    cursor = ScriptCursor(parse_script([{"name": "child", "match_first_user": "task A"}]))
    refused = cursor.take(_request(("user", "task B"), ("user", "task A later")))
    assert isinstance(refused, Refused)
    assert "step 1 (child)" in refused.message and "first user message" in refused.message
    assert "'task B'" in refused.message
