from __future__ import annotations

import json

from services.loop.core.tasks import (
    TODO_WRITE_TOOL,
    TaskItem,
    TaskState,
    find_cycle,
    render_task_state,
    todo_write,
)


def start(*contents: str) -> TaskState:
    result = todo_write(TaskState(), {"add": [{"content": c} for c in contents]})
    assert result.ok
    return result.state


def test_items_get_sequential_ids_and_start_pending() -> None:
    state = start("read", "fix", "test")
    assert [(i.id, i.status) for i in state.items] == [("1", "pending"), ("2", "pending"), ("3", "pending")]


def test_a_dependency_on_an_earlier_item_in_the_same_call_is_accepted() -> None:
    r = todo_write(TaskState(), {"add": [{"id": "a", "content": "x"}, {"id": "b", "content": "y", "depends_on": ["a"]}]})
    assert r.ok and r.state.get("b") == TaskItem("b", "y", "pending", ["a"])


def test_a_forward_reference_is_an_unknown_dependency_and_changes_nothing() -> None:
    state = start("one")
    r = todo_write(state, {"add": [{"content": "two", "depends_on": ["3"]}, {"content": "three"}]})
    assert not r.ok and r.error_code == "unknown_dependency"
    assert r.data["unknown"] == ["3"]
    assert r.state is state and len(state.items) == 1


def test_a_self_dependency_is_refused() -> None:
    r = todo_write(TaskState(), {"add": [{"id": "x", "content": "loop", "depends_on": ["x"]}]})
    assert (r.ok, r.error_code) == (False, "self_dependency")


def test_repeated_or_empty_dependency_ids_are_refused() -> None:
    state = start("a")
    assert todo_write(state, {"add": [{"content": "b", "depends_on": ["1", "1"]}]}).error_code == "invalid_dependency"
    assert todo_write(state, {"add": [{"content": "b", "depends_on": [""]}]}).error_code == "invalid_dependency"


def test_starting_an_item_with_open_dependencies_is_blocked_with_the_open_ids() -> None:
    state = todo_write(start("a"), {"add": [{"content": "b", "depends_on": ["1"]}]}).state
    r = todo_write(state, {"update": [{"id": "2", "status": "in_progress"}]})
    assert not r.ok and r.error_code == "blocked_by_dependencies"
    assert r.data == {"id": "2", "open": ["1"], "unknown": [], "cycle": []}
    assert "dropped" in r.output, "the error names the ways out"


def test_completing_the_dependency_first_in_the_same_call_unblocks() -> None:
    state = todo_write(start("a"), {"add": [{"content": "b", "depends_on": ["1"]}]}).state
    r = todo_write(state, {"update": [{"id": "1", "status": "completed"}, {"id": "2", "status": "in_progress"}]})
    assert r.ok and r.state.get("2") is not None and r.state.get("2").status == "in_progress"  # type: ignore[union-attr]


def test_a_dropped_dependency_counts_as_finished() -> None:
    state = todo_write(start("a"), {"add": [{"content": "b", "depends_on": ["1"]}]}).state
    r = todo_write(state, {"update": [{"id": "1", "status": "dropped"}, {"id": "2", "status": "completed"}]})
    assert r.ok


def test_pending_blocked_and_dropped_are_always_allowed() -> None:
    state = todo_write(start("a"), {"add": [{"content": "b", "depends_on": ["1"]}]}).state
    for status in ("blocked", "dropped", "pending"):
        assert todo_write(state, {"update": [{"id": "2", "status": status}]}).ok


def test_legacy_cycles_are_reported_and_unknown_legacy_deps_too() -> None:
    state = TaskState(items=[TaskItem("1", "a", depends_on=["2"]), TaskItem("2", "b", depends_on=["1"]),
                             TaskItem("3", "c", depends_on=["9"])])
    assert find_cycle(state, "1") == ["1", "2", "1"]
    r = todo_write(state, {"update": [{"id": "1", "status": "in_progress"}]})
    assert r.data["cycle"] == ["1", "2", "1"] and r.data["open"] == ["2"]
    assert "1 -> 2 -> 1" in r.output
    assert todo_write(state, {"update": [{"id": "3", "status": "completed"}]}).data["unknown"] == ["9"]


def test_enforce_dependencies_off_restores_the_old_lenient_behaviour() -> None:
    r = todo_write(TaskState(), {"add": [{"id": "x", "content": "a", "depends_on": ["x", "nope"]}],
                                 "update": [{"id": "x", "status": "completed"}]}, enforce_dependencies=False)
    assert r.ok


def test_bad_updates_name_the_problem() -> None:
    state = start("a")
    assert todo_write(state, {"update": [{"id": "7", "status": "completed"}]}).error_code == "unknown_item"
    assert todo_write(state, {"update": [{"id": "1", "status": "done"}]}).error_code == "invalid_status"
    assert todo_write(state, {"add": [{"content": "  "}]}).error_code == "invalid_arguments"
    assert todo_write(state, {"add": "x"}).error_code == "invalid_arguments"
    assert todo_write(state, {"add": [{"id": "1", "content": "again"}]}).error_code == "duplicate_id"


def test_the_task_state_block_renders_goal_progress_and_marks() -> None:
    state = todo_write(TaskState(), {"goal": "fix the parser", "add": [{"content": "read"}, {"content": "edit", "depends_on": ["1"]}],
                                     "update": [{"id": "1", "status": "completed"}]}).state
    block = render_task_state(state)
    assert block.splitlines() == [
        "<task-state>", "goal: fix the parser", "progress: 1/2 completed", "[x] 1. read", "[ ] 2. edit (after 1)",
        "</task-state>",
    ]
    assert render_task_state(TaskState()) == ""


def test_session_json_is_camel_case_and_round_trips() -> None:
    state = todo_write(start("a"), {"add": [{"content": "b", "depends_on": ["1"]}]}).state
    raw = json.loads(json.dumps(state.to_json()))
    assert raw["items"][1] == {"id": "2", "content": "b", "status": "pending", "dependsOn": ["1"]}
    assert TaskState.from_json(raw) == state


def test_reading_a_damaged_task_state_keeps_what_it_can() -> None:
    state = TaskState.from_json({"items": [{"id": "1", "content": "a", "status": "weird"}, "junk", {"content": "no id"}]})
    assert state.items == [TaskItem("1", "a", "pending", [])]
    assert TaskState.from_json(None) == TaskState()


def test_open_items_are_pending_in_progress_or_blocked() -> None:
    state = start("a", "b", "c", "d")
    state = todo_write(state, {"update": [{"id": "1", "status": "completed"}, {"id": "2", "status": "dropped"},
                                         {"id": "3", "status": "blocked"}]}).state
    assert [i.id for i in state.open_items()] == ["3", "4"]


def test_the_tool_schema_is_a_function_named_todo_write() -> None:
    fn = TODO_WRITE_TOOL["function"]
    assert fn["name"] == "todo_write"
    assert set(fn["parameters"]["properties"]) == {"goal", "add", "update"}
    assert len(json.dumps(TODO_WRITE_TOOL)) < 1500, "every schema byte is paid on every step"
