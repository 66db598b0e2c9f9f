from __future__ import annotations

import dataclasses
from pathlib import Path

from services.kernel.config import load_config
from services.loop.policy.settings import LoopSettings, loop_settings


def test_defaults_let_a_real_task_finish_while_the_guards_stop_loops() -> None:
    s = LoopSettings()
    assert (s.max_tool_iterations, s.max_auto_continuations, s.turn_timeout_seconds, s.turn_token_budget) == (
        50, 3, 1800.0, 0)
    assert (s.failed_streak_threshold, s.max_strategy_nudges, s.stall_iterations) == (2, 3, 3)
    assert (s.search_streak_threshold, s.search_streak_l2, s.search_streak_l3) == (4, 6, 0)
    assert (s.stale_streak_l1, s.stale_streak_l2, s.stale_streak_l3, s.repeated_nonempty_l3) == (3, 4, 6, 2)
    assert s.duplicate_call_threshold == 2 and s.enforce_dependencies and not s.strict_paths


def test_every_field_has_a_docstring() -> None:
    import inspect

    source = inspect.getsource(LoopSettings)
    for f in dataclasses.fields(LoopSettings):
        after = source.split(f"    {f.name}:", 1)[1].splitlines()[1].strip()
        assert after.startswith('"""'), f"{f.name} has no docstring"


def test_the_ai_section_is_read_with_camel_case_keys(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("ai:\n  maxToolIterations: 4\n  bash_policy:\n    deny: ['^terraform']\n")
    s = loop_settings(load_config(None, env={}, user_path=path))
    assert s.max_tool_iterations == 4
    assert s.bash_policy.deny == ["^terraform"]


def test_a_wrong_type_is_ignored_with_a_warning_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("ai:\n  turn_timeout_seconds: soon\n  max_tool_iterations: 7\n")
    config = load_config(None, env={}, user_path=path)
    settings = loop_settings(config)
    assert settings.turn_timeout_seconds == LoopSettings().turn_timeout_seconds and settings.max_tool_iterations == 7
    assert any("ai.turn_timeout_seconds" in w and "wrong type" in w for w in config.warnings), config.warnings
