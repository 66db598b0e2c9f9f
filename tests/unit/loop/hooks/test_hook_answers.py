"""How a hook's answer is read: our JSON line, and Claude Code's exit codes and JSON."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from services.loop.core.ports import ToolCall, ToolOutcome
from services.loop.core.turn_events import EventBody, HookRun
from services.loop.hooks import claude
from services.loop.hooks.answer import read_answer, redact_value
from services.loop.hooks.config import HookSettings, parse_hooks
from services.loop.hooks.engine import HookEngine
from services.loop.hooks.runner import HookFailed, RawAnswer


def test_our_format_blocks_rewrites_and_injects() -> None:
    assert read_answer(RawAnswer(0, '{"decision": "block", "reason": "no"}\n', "")).block == "no"
    assert read_answer(RawAnswer(0, '{"arguments": {"command": "ls"}}', "")).arguments == {"command": "ls"}
    assert read_answer(RawAnswer(0, '{"context": "hi"}', "")).context == "hi"
    empty = read_answer(RawAnswer(0, "", ""))
    assert empty.block is None and empty.arguments is None and not empty.context


@pytest.mark.parametrize("answer", [RawAnswer(1, "", "boom"), RawAnswer(0, "not json", ""),
                                    RawAnswer(0, "[1]", ""), RawAnswer(0, '{"arguments": "ls"}', "")])
def test_a_garbled_answer_is_the_hooks_failure(answer: RawAnswer) -> None:
    with pytest.raises(HookFailed):
        read_answer(answer)


def test_claude_code_exit_2_blocks_with_stderr_and_json_decisions_are_understood() -> None:
    assert claude.read_answer("PreToolUse", RawAnswer(2, "", "no network\n")).block == "no network"
    deny = '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", ' \
           '"permissionDecisionReason": "secrets"}}'
    assert claude.read_answer("PreToolUse", RawAnswer(0, deny, "")).block == "secrets"
    update = '{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls -a"}}}'
    verdict = claude.read_answer("PreToolUse", RawAnswer(0, update, ""))
    assert verdict.block is None and verdict.arguments == {"command": "ls -a"}
    assert claude.read_answer("UserPromptSubmit", RawAnswer(0, "branch: main\n", "")).context == "branch: main"
    assert claude.read_answer("PostToolUse", RawAnswer(2, "", "lint failed")).context == "lint failed"
    with pytest.raises(HookFailed, match="non-blocking"):
        claude.read_answer("PreToolUse", RawAnswer(1, "", "oops"))


def test_secret_shaped_values_are_redacted_all_the_way_down() -> None:
    value = redact_value({"a": ["token=abcdefgh123", {"b": "sk-abcdefghijklmnop"}], "n": 3})
    assert value == {"a": ["[redacted]", {"b": "[redacted]"}], "n": 3}


def _engine(raw: dict[str, object], tmp_path: Path) -> HookEngine:
    settings, _ = parse_hooks(raw)
    return HookEngine(HookSettings(settings.hooks, str(tmp_path)), "s1", str(tmp_path))


def test_a_python_hook_from_plugin_dir_can_block_and_an_observer_that_tries_to_is_not_obeyed(tmp_path: Path) -> None:
    (tmp_path / "guard.py").write_text(
        "def hook(event):\n    return {'decision': 'block', 'reason': 'not ' + event['tool']}\n")
    engine = _engine({"events": [
        {"name": "watcher", "point": "tool.before", "kind": "python", "module": "guard"},
        {"name": "guard", "point": "tool.before", "kind": "python", "module": "guard", "capabilities": ["block"]},
    ]}, tmp_path)
    events: list[EventBody] = []
    call = ToolCall("c1", "bash", '{"command": "ls"}')
    got = asyncio.run(engine.tool_before(call, {"command": "ls"}, events.append))
    assert isinstance(got, ToolOutcome) and got.error_code == "blocked_by_hook" and "not bash" in got.error_message
    runs = [(e.hook, e.outcome) for e in events if isinstance(e, HookRun)]
    assert runs == [("watcher", "failed"), ("guard", "blocked")]


def test_a_blocking_python_hook_that_raises_refuses_the_call(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def hook(event):\n    raise RuntimeError('bug')\n")
    engine = _engine({"events": [{"name": "b", "point": "tool.before", "kind": "python", "module": "broken",
                                  "capabilities": ["block"]}]}, tmp_path)
    got = asyncio.run(engine.tool_before(ToolCall("c1", "read", "{}"), {}, lambda e: None))
    assert isinstance(got, ToolOutcome) and "RuntimeError: bug" in got.error_message
