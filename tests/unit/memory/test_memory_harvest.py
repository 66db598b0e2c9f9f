"""The one tolerant candidate parser and the tool schemas."""

from __future__ import annotations

import json
from typing import get_args

from services.memory.harvest import EXTRACTOR_PROMPT, extractor_prompt, parse_candidates
from services.memory.model import KINDS, Action
from services.memory.tools_schema import MEMORY_SEARCH_SCHEMA, MEMORY_WRITE_SCHEMA, Kind


def test_a_fenced_array_with_prose_around_it_parses() -> None:
    text = 'Here you go:\n```json\n[{"text": "CI runs on GitHub Actions", "kind": "fact", "importance": 4, "action": "add", "scene": "CI"}]\n```'
    [c] = parse_candidates(text)
    assert (c.text, c.kind, c.importance, c.action, c.scene) == ("CI runs on GitHub Actions", "fact", 4, Action.ADD, "CI")


def test_an_object_wrapping_candidates_parses_and_bad_items_are_skipped() -> None:
    text = json.dumps({"candidates": [{"text": "Build with uv"}, {"kind": "fact"}, "junk", {"text": '{"a": 1}'}]})
    assert [c.text for c in parse_candidates(text)] == ["Build with uv"]


def test_a_truncated_answer_harvests_nothing() -> None:
    truncated = '[{"text": "CI 跑在 GitHub Actions", "kind": "fact"},\n {"text": "构建用 uv",\n  "kind": "decision",'
    assert parse_candidates(truncated) == []
    assert parse_candidates("I found nothing worth remembering.") == []
    assert parse_candidates("") == []


def test_the_prompt_lists_existing_notes_for_updates() -> None:
    assert "{existing_notes}" in EXTRACTOR_PROMPT
    assert "n1: Build with uv" in extractor_prompt([("n1", "Build with uv")])
    assert "(none)" in extractor_prompt([])
    assert "reuse one when it fits" in extractor_prompt([], ["构建", "发布"]) and "构建, 发布" in extractor_prompt([], ["构建", "发布"])


def test_tool_schemas_are_openai_functions_with_the_spec_parameters() -> None:
    search = MEMORY_SEARCH_SCHEMA["function"]
    assert search["name"] == "memory_search" and search["parameters"]["required"] == ["query"]
    assert set(search["parameters"]["properties"]) == {
        "query", "k", "kind", "evidence", "scope", "scene", "since_days", "include_near_misses"
    }
    assert MEMORY_WRITE_SCHEMA["function"]["parameters"]["required"] == ["text"]
    assert set(get_args(Kind)) == set(KINDS)
    json.dumps([MEMORY_SEARCH_SCHEMA, MEMORY_WRITE_SCHEMA])


def test_tool_arguments_are_validated_with_a_sentence_saying_what_to_send() -> None:
    import pytest

    from services.memory.tools_schema import ToolArgumentError, parse_search_args, parse_write_args

    q = parse_search_args({"query": " uv ", "k": 50, "kind": "decision", "since_days": -3, "include_near_misses": True})
    assert (q.query, q.k, q.kind, q.since_days, q.include_near_misses) == ("uv", 20, "decision", 0.0, True)
    for bad, words in (({}, "`query` is required"), ({"query": "x", "k": "3"}, "`k` must be an integer"),
                       ({"query": 3}, "`query` must be a string")):
        with pytest.raises(ToolArgumentError, match=words):
            parse_search_args(bad)
    c = parse_write_args({"text": "Builds use uv", "kind": "decision", "importance": 9})
    assert (c.kind, c.importance, c.action, c.evidence) == ("decision", 5, Action.ADD, "model")
    with pytest.raises(ToolArgumentError, match="`target_id` is required with action SUPERSEDE"):
        parse_write_args({"text": "Builds use pip", "action": "supersede"})
    with pytest.raises(ToolArgumentError, match="`kind` must be one of 'fact', 'decision'"):
        parse_write_args({"text": "Builds use pip", "kind": "gossip"})
