"""Script parsing: valid scripts become steps; every malformed field is named in one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.fake_model.errors import ScriptError
from services.fake_model.script import load_script_file, parse_script


def error_of(data: Any) -> str:
    with pytest.raises(ScriptError) as caught:
        parse_script(data)
    return str(caught.value)


def test_a_list_of_steps_parses_with_defaults() -> None:
    script = parse_script([{"text": "hi"}, {"tool_calls": [{"name": "read", "arguments": {"path": "a.py"}}]}])
    first, second = script.steps
    assert (first.text, first.repeat, first.usage_shape, first.effective_finish_reason()) == ("hi", 1, "openai", "stop")
    assert second.effective_finish_reason() == "tool_calls"
    assert json.loads(second.tool_calls[0].arguments_json) == {"path": "a.py"}
    assert script.models == ("fake-model",)


def test_a_mapping_with_steps_and_models_parses() -> None:
    script = parse_script({"models": ["m1", "m2"], "steps": [{"text": "x", "match": ["a", "b"], "repeat": "forever"}]})
    assert script.models == ("m1", "m2")
    assert script.steps[0].match == ("a", "b")
    assert script.steps[0].repeat is None


def test_conversation_match_keys_parse_from_a_string_or_a_list() -> None:
    step = parse_script([{"match_first_user": "task", "match_anywhere": ["a", "b"], "match_absent": "done"}]).steps[0]
    assert (step.match_first_user, step.match_anywhere, step.match_absent) == (("task",), ("a", "b"), ("done",))


def test_arguments_raw_is_kept_verbatim_even_when_it_is_broken_json() -> None:
    step = parse_script([{"tool_calls": [{"name": "edit", "arguments_raw": '{"path": "a.py", '}]}]).steps[0]
    assert step.tool_calls[0].arguments_json == '{"path": "a.py", '


def test_a_fault_can_be_a_bare_kind_or_a_mapping() -> None:
    steps = parse_script([{"fault": "server_error"},
                          {"fault": {"kind": "stall", "after_chunks": 2, "seconds": 0.5}}]).steps
    assert steps[0].fault is not None and steps[0].fault.kind == "server_error"
    assert steps[1].fault is not None and (steps[1].fault.after_chunks, steps[1].fault.seconds) == (2, 0.5)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([{"txt": "typo"}], "step 1 has unknown key(s) ['txt']"),
        ([{"text": "ok"}, {"fault": "meltdown"}], "step 2: fault kind must be one of"),
        ([{"tool_calls": [{"name": "x", "arguments": {}, "arguments_raw": "{}"}]}], "not both"),
        ([{"tool_calls": [{"arguments": {}}]}], "step 1 tool_calls[0]: 'name' is required"),
        ([{"repeat": 0}], "repeat must be a positive integer or 'forever'"),
        ([{"usage_shape": "anthropic"}], "usage_shape must be one of"),
        ([{"delay_ms": -1}], "delay_ms must be a non-negative number"),
        ([{"usage": {"prompt_tokens": "many"}}], "usage.prompt_tokens must be a non-negative integer"),
        ([{"fault": {"kind": "http_error", "status": 200}}], "status must be an HTTP error status"),
        ({"steps": [], "extra": 1}, "unknown top-level key(s) ['extra']"),
        ("just text", "must be a list of steps"),
        ([{"match_first_user": {"role": "user"}}], "step 1: match_first_user must be a string or a list"),
        ([{"match_absent": 3}], "step 1: match_absent must be a string or a list"),
    ],
)
def test_malformed_scripts_are_refused_with_the_step_and_field_named(data: Any, expected: str) -> None:
    assert expected in error_of(data)


def test_a_yaml_syntax_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("- text: [unclosed\n", encoding="utf-8")
    with pytest.raises(ScriptError, match=r"broken\.yaml is not valid YAML"):
        load_script_file(path)


def test_a_missing_file_says_to_pass_an_existing_one(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match=r"cannot read fake-model script .*nope\.yaml.*--script"):
        load_script_file(tmp_path / "nope.yaml")


def test_a_json_script_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"text": "from json"}]), encoding="utf-8")
    assert load_script_file(path).steps[0].text == "from json"


def test_an_invalid_step_in_a_file_names_file_and_step(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("- text: fine\n- fault: nope\n", encoding="utf-8")
    with pytest.raises(ScriptError, match=r"s\.yaml: step 2: fault kind"):
        load_script_file(path)
