"""The harvest's pure parts: the excerpt the extractor reads and the evidence label."""

from __future__ import annotations

from typing import Any

from services.loop.harvest.extract import TOOL_PREVIEW_CHARS, evidence_of, render_excerpt


def test_the_excerpt_cuts_tool_output_and_names_the_calls() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "pytest"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 5000, "_ok": True},
        {"role": "assistant", "content": "All green."},
    ]
    excerpt = render_excerpt(messages)
    assert excerpt.startswith("user: run the tests")
    assert '[calls bash {"command": "pytest"}]' in excerpt
    assert "x" * TOOL_PREVIEW_CHARS in excerpt and "x" * (TOOL_PREVIEW_CHARS + 1) not in excerpt
    assert excerpt.endswith("assistant: All green.")


def test_evidence_is_tool_only_when_a_call_succeeded() -> None:
    failed = [{"role": "tool", "tool_call_id": "c1", "content": "permission_denied: no", "_ok": False}]
    assert evidence_of(failed) == "model"
    assert evidence_of([*failed, {"role": "tool", "tool_call_id": "c2", "content": "ok", "_ok": True}]) == "tool"
    assert evidence_of([{"role": "assistant", "content": "I think so."}]) == "model"
