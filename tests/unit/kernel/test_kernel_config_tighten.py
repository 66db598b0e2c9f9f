"""A project layer may only tighten safety settings: lists add up, booleans take the stricter
value, limits only go down, safety-looking keys without a rule are dropped; each refusal warns."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from services.kernel.config import LOWER_DEFAULTS, TIGHTEN_RULES, load_config
from services.loop.main import LoopConfig
from services.loop.policy.settings import LoopSettings
from tests.support.trust import trust_workspace

USER = {"ai": {"bash_policy": {"deny": ["rm -rf"], "confirm": ["git push"]}, "strict_paths": True,
               "turn_timeout_seconds": 300},
        "loop": {"mcp": False}}


def load(tmp_path: Path, project: str, user: dict[str, Any] | None = None, trust: bool = False) -> Any:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "ai-coding.local.yaml").write_text(project)
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    if trust:
        trust_workspace(ws, env, user_data=USER if user is None else user)
    return load_config(ws, env=env, user_data=USER if user is None else user)


@pytest.mark.parametrize("trust", [False, True])
def test_a_project_cannot_empty_or_replace_the_users_deny_and_confirm_lists(tmp_path: Path, trust: bool) -> None:
    config = load(tmp_path, "ai:\n  bash_policy:\n    deny: []\n    confirm: [make deploy]\n", trust=trust)
    assert config.get("ai.bash_policy.deny") == ["rm -rf"]
    assert config.get("ai.bash_policy.confirm") == ["git push", "make deploy"]  # adding is tightening


def test_a_project_cannot_turn_off_strict_paths_or_turn_on_a_tool_the_user_turned_off(tmp_path: Path) -> None:
    config = load(tmp_path, "ai:\n  strict_paths: false\n  enforce_dependencies: false\nloop:\n  mcp: true\n"
                            "  memory: false\n  traces: false\n")
    assert config.get("ai.strict_paths") is True and config.get("loop.mcp") is False
    assert config.get("ai.enforce_dependencies") is None and config.get("loop.traces") is None  # defaults stay
    assert config.get("loop.memory") is False  # turning a tool off is tightening
    joined = "\n".join(config.warnings)
    for key in ("ai.strict_paths", "loop.mcp", "ai.enforce_dependencies", "loop.traces"):
        assert f"`{key}`" in joined and "only tighten" in joined


def test_limits_only_go_down_and_zero_does_not_switch_them_off(tmp_path: Path) -> None:
    lowered = load(tmp_path, "ai:\n  turn_timeout_seconds: 60\n  duplicate_call_threshold: 1\n")
    assert lowered.get("ai.turn_timeout_seconds") == 60 and lowered.get("ai.duplicate_call_threshold") == 1
    raised = load(tmp_path, "ai:\n  turn_timeout_seconds: 0\n  duplicate_call_threshold: 9\n  turn_token_budget: 0\n")
    assert raised.get("ai.turn_timeout_seconds") == 300
    assert raised.get("ai.duplicate_call_threshold") is None and raised.get("ai.turn_token_budget") is None
    assert len(raised.warnings) == 3


@pytest.mark.parametrize("key", ["ai.approval_mode: auto", "ai.permission_mode: auto", "ai.yolo: true",
                                 "tools.bash.enabled: true", "ai.allowed_commands: [sudo]",
                                 "memory.network: true", "hooks_plugin_dir: x", "ai.bypass_permissions: true"])
def test_safety_looking_keys_without_a_tightening_rule_are_dropped(tmp_path: Path, key: str) -> None:
    name, value = key.split(": ")
    parts = name.split(".")
    text = "".join(f"{'  ' * n}{p}:\n" for n, p in enumerate(parts[:-1])) + f"{'  ' * (len(parts) - 1)}{parts[-1]}: {value}\n"
    config = load(tmp_path, text, user={})
    assert config.get(name) is None, config.data
    assert any(f"`{name}`" in w for w in config.warnings), config.warnings


def test_behaviour_keys_still_come_from_the_project(tmp_path: Path) -> None:
    config = load(tmp_path, "ai:\n  max_tool_iterations: 4\n  max_auto_continuations: 1\ndefault_model: x\n")
    assert config.get("ai.max_tool_iterations") == 4 and config.get("ai.max_auto_continuations") == 1
    assert config.get("default_model") == "x" and config.warnings == []


def test_the_lower_defaults_are_the_loops_own_defaults() -> None:
    defaults = {f"ai.{f.name}": f.default for f in dataclasses.fields(LoopSettings)}
    defaults |= {f"loop.{f.name}": f.default for f in dataclasses.fields(LoopConfig)}
    for dotted, value in LOWER_DEFAULTS.items():
        assert defaults[dotted] == value, dotted
    for dotted, _ in TIGHTEN_RULES:
        if dotted.startswith(("ai.", "loop.")):  # the other sections: test_kernel_config_rules.py
            assert dotted in defaults or dotted.startswith("ai.bash_policy."), dotted
