"""A step's tool calls always carry distinct ids, whatever ids the model sent (pure)."""

from __future__ import annotations

from typing import Any

from services.loop.core.pairing import MISSING_RESULT, is_paired, repair_pairing, unique_call_ids
from services.loop.model.stream import StreamAssembler, completion_as_chunk


def _calls_chunk(*calls: tuple[str, str, str]) -> dict[str, Any]:
    deltas = [{"index": n, "id": cid, "function": {"name": name, "arguments": args}}
              for n, (cid, name, args) in enumerate(calls)]
    return {"choices": [{"index": 0, "delta": {"tool_calls": deltas}, "finish_reason": "tool_calls"}]}


def test_a_repeated_id_keeps_the_first_call_and_renames_the_later_ones_in_order() -> None:
    assert unique_call_ids(["dup", "dup", "dup"], "call") == ["dup", "dup_2", "dup_3"]


def test_a_rename_never_takes_an_id_the_model_sent_for_another_call() -> None:
    assert unique_call_ids(["a", "a", "a_2"], "call") == ["a", "a_3", "a_2"]


def test_empty_ids_are_made_up_from_the_prefix_and_stay_distinct() -> None:
    assert unique_call_ids(["", "", "x"], "call_ab") == ["call_ab_0", "call_ab_1", "x"]
    assert unique_call_ids(["", "call_ab_0"], "call_ab") == ["call_ab_0_2", "call_ab_0"]


def test_distinct_ids_come_back_unchanged() -> None:
    assert unique_call_ids(["c1", "c2"], "call") == ["c1", "c2"]


def test_two_streamed_calls_with_one_id_come_out_as_two_calls_with_distinct_ids() -> None:
    asm = StreamAssembler()
    asm.feed(_calls_chunk(("dup", "read", '{"path": "calc.py"}'), ("dup", "glob", '{"pattern": "*.py"}')))
    calls = asm.tool_calls("call_x")
    assert [(c.id, c.name) for c in calls] == [("dup", "read"), ("dup_2", "glob")]
    assert calls[1].arguments() == {"pattern": "*.py"}
    history: list[dict[str, Any]] = [{"role": "assistant", "tool_calls": [{"id": c.id} for c in calls]},
               *({"role": "tool", "tool_call_id": c.id} for c in calls)]
    assert is_paired(history)


def test_a_non_streamed_reply_with_repeated_and_empty_ids_gets_distinct_ids() -> None:
    body = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"tool_calls": [
        {"id": "dup", "function": {"name": "read", "arguments": "{}"}},
        {"id": "dup", "function": {"name": "glob", "arguments": "{}"}},
        {"id": "  ", "function": {"name": "grep", "arguments": "{}"}}]}}]}
    asm = StreamAssembler()
    asm.feed(completion_as_chunk(body))
    assert [c.id for c in asm.tool_calls("call_y")] == ["dup", "dup_2", "call_y_2"]


def test_without_an_index_a_second_named_call_under_the_same_id_is_a_new_call() -> None:
    asm = StreamAssembler()
    for delta in ({"id": "dup", "function": {"name": "read", "arguments": '{"path": '}},
                  {"id": "dup", "function": {"arguments": '"calc.py"}'}},
                  {"id": "dup", "function": {"name": "glob", "arguments": '{"pattern": '}},
                  {"id": "dup", "function": {"arguments": '"*.py"}'}}):
        asm.feed({"choices": [{"index": 0, "delta": {"tool_calls": [delta]}}]})
    calls = asm.tool_calls("call_z")
    assert [(c.id, c.name, c.arguments()) for c in calls] == [
        ("dup", "read", {"path": "calc.py"}), ("dup_2", "glob", {"pattern": "*.py"})]


def _dup_history() -> list[dict[str, Any]]:
    """What a session saved before the fix holds: one id on two calls, each answered once."""
    return [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "dup", "type": "function", "function": {"name": "read", "arguments": "{}"}},
            {"id": "dup", "type": "function", "function": {"name": "glob", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "dup", "content": "read output"},
        {"role": "tool", "tool_call_id": "dup", "content": "glob output"},
    ]


def test_a_history_with_one_id_on_two_calls_is_not_paired() -> None:
    assert not is_paired(_dup_history())


def test_repair_renames_the_repeated_call_and_gives_it_the_second_result() -> None:
    history = _dup_history()
    repaired, fixes = repair_pairing(history)
    assert fixes == 1
    assert [c["id"] for c in repaired[1]["tool_calls"]] == ["dup", "dup_2"]
    assert [(m["tool_call_id"], m["content"]) for m in repaired[2:]] == [
        ("dup", "read output"), ("dup_2", "glob output")]
    assert is_paired(repaired)
    assert history == _dup_history()  # the input is not changed in place


def test_repair_of_a_repeated_id_with_one_result_fills_the_other_as_interrupted() -> None:
    repaired, _ = repair_pairing(_dup_history()[:3])
    assert [(m["tool_call_id"], m["content"]) for m in repaired[2:]] == [
        ("dup", "read output"), ("dup_2", MISSING_RESULT)]
    assert is_paired(repaired)
