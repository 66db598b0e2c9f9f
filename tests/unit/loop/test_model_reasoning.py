from __future__ import annotations

from typing import Any

from services.loop.model.providers import (
    PROVIDERS,
    ThinkingFormat,
    echoes_reasoning,
    thinking_options,
    with_reasoning,
)


def _call(n: int) -> list[dict[str, Any]]:
    return [{"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}]


HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "plain question"},
    {"role": "assistant", "content": "plain answer", "reasoning": "r0"},
    {"role": "user", "content": "use tools"},
    {"role": "assistant", "content": None, "reasoning": "r1", "tool_calls": _call(1)},
    {"role": "tool", "tool_call_id": "c1", "content": "x"},
    {"role": "assistant", "content": None, "reasoning": "r2", "tool_calls": _call(2)},
    {"role": "tool", "tool_call_id": "c2", "content": "y"},
    {"role": "assistant", "content": "done", "reasoning": "r3"},
    {"role": "user", "content": "next"},
]


def test_deepseek_gets_reasoning_back_on_every_assistant_message_of_a_tool_call_turn_only() -> None:
    sent = with_reasoning(HISTORY, echoes_reasoning(PROVIDERS["deepseek"].echo_reasoning, None))
    assert [m.get("reasoning_content") for m in sent if m["role"] == "assistant"] == [None, "r1", "r2", "r3"]
    assert not any("reasoning" in m for m in sent)


def test_other_providers_and_deepseek_with_thinking_off_never_get_reasoning() -> None:
    for provider, thinking in (("openai", None), ("qwen", True), ("ollama", None), ("deepseek", False)):
        sent = with_reasoning(HISTORY, echoes_reasoning(PROVIDERS[provider].echo_reasoning, thinking))
        assert not any("reasoning" in m or "reasoning_content" in m for m in sent), provider


def test_history_without_reasoning_is_passed_through_uncopied() -> None:
    plain = [{"role": "user", "content": "hi"}]
    assert with_reasoning(plain, True) is plain


def test_thinking_and_effort_are_sent_the_way_each_provider_reads_them() -> None:
    def sent(provider: str, thinking: bool | None, effort: str) -> dict[str, Any]:
        return thinking_options(PROVIDERS[provider].thinking_format, thinking, effort)

    assert sent("deepseek", True, "max") == {"thinking": {"type": "enabled"}, "reasoning_effort": "max"}
    assert sent("deepseek", False, "max") == {"thinking": {"type": "disabled"}}
    assert sent("qwen", False, "") == {"enable_thinking": False}
    assert sent("openai", None, "low") == {"reasoning_effort": "low"}
    assert sent("ollama", False, "") == {"reasoning_effort": "none"}
    assert sent("generic", None, "") == {}
    assert thinking_options(ThinkingFormat.DEEPSEEK, None, "high") == {"reasoning_effort": "high"}
