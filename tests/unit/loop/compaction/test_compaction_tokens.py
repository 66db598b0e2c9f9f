"""The per-step token estimate: counted incrementally, always equal to a full recount."""

from __future__ import annotations

from services.loop.compaction.state import CompactionState
from services.loop.compaction.tokens import RunningBytes, message_bytes
from tests.unit.loop.compaction.helpers import exchange, history


def _recount(messages: list[dict[str, object]]) -> int:
    return sum(message_bytes(m) for m in messages)


def test_the_running_count_equals_a_full_recount_as_the_history_grows_and_is_rewritten() -> None:
    messages = history(5)
    state = CompactionState()
    running = RunningBytes()
    assert running.of(messages, state) == _recount(messages)
    messages += exchange(99, "new output " * 50)
    assert running.of(messages, state) == _recount(messages)
    messages[-1] = {**messages[-1], "content": "rewritten in place"}  # the last message replaced
    assert running.of(messages, state) == _recount(messages)
    del messages[3:7]  # shorter: counted again from scratch
    assert running.of(messages, state) == _recount(messages)


def test_a_new_compaction_state_counts_its_view_afresh() -> None:
    first, second = history(4), history(2, output_chars=50)
    running = RunningBytes()
    running.of(first, CompactionState())
    # Same length and a last message that is the same object, but another state: another view.
    second[-1] = first[-1]
    second += first[len(second):]
    assert running.of(second, CompactionState(compactions=1)) == _recount(second)


def test_large_tool_results_are_counted_apart_for_the_recent_output_check() -> None:
    messages = [{"role": "user", "content": "go"}, *exchange(1, "short"), *exchange(2, "y" * 5000)]
    running = RunningBytes(large_tool_chars=800)
    running.of(messages, CompactionState())
    assert running.large_tool_bytes == message_bytes(messages[-1])
    messages += exchange(3, "z" * 900)
    running.of(messages, CompactionState())  # another state: counted afresh, the same answer
    assert running.large_tool_bytes == message_bytes(messages[-1]) + message_bytes(messages[4])
