"""The output_schema contract: refusals before a run, the tolerant parse, strict content after it."""

from __future__ import annotations

import pytest

from services.loop.subagents.contract import MAX_SCHEMA_CHARS, SchemaRefused, check_schema, parse_facts

SCHEMA = {"type": "object", "required": ["verdict", "score"]}


def test_a_schema_over_the_size_limit_is_refused_as_too_large() -> None:
    with pytest.raises(SchemaRefused) as err:
        check_schema({"required": ["a"], "description": "x" * MAX_SCHEMA_CHARS})
    assert err.value.code == "schema_too_large" and str(MAX_SCHEMA_CHARS) in str(err.value)


@pytest.mark.parametrize("schema", [["verdict"], "object", 3, {"required": "verdict"}, {"required": [1]}])
def test_a_schema_that_is_not_an_object_with_a_key_list_is_refused_as_invalid(schema: object) -> None:
    with pytest.raises(SchemaRefused) as err:
        check_schema(schema)
    assert err.value.code == "schema_invalid"


def test_the_whole_text_as_json_parses_and_extra_keys_are_tolerated() -> None:
    result = parse_facts('{"verdict": "ok", "score": 3, "notes": []}', SCHEMA)
    assert result.valid and result.facts == {"verdict": "ok", "score": 3, "notes": []} and result.errors == []


def test_a_fenced_block_wins_over_braces_in_the_prose_around_it() -> None:
    text = 'Set {x} aside.\n```json\n{"verdict": "bad", "score": 0}\n```'
    assert parse_facts(text, SCHEMA).facts == {"verdict": "bad", "score": 0}


def test_the_first_balanced_object_in_prose_is_found_even_with_braces_inside_strings() -> None:
    text = 'Result: {"verdict": "use {braces}", "score": 1} -- then {"verdict": "later", "score": 2}'
    result = parse_facts(text, SCHEMA)
    assert result.valid and result.facts == {"verdict": "use {braces}", "score": 1}


def test_values_are_never_coerced_and_a_missing_required_key_is_named() -> None:
    result = parse_facts('{"score": "3"}', SCHEMA)
    assert not result.valid and result.facts == {"score": "3"}
    assert result.errors == ["missing required key 'verdict'"]


def test_text_without_any_json_object_is_invalid_with_no_facts() -> None:
    result = parse_facts("I could not finish: [1, 2]", SCHEMA)
    assert result.facts is None and not result.valid and result.errors == ["no JSON object found in the final answer"]
