"""A project may lower the loop's step limit, never raise it (`max_tool_iterations: 500` in a
cloned repository must not buy ten times the steps the user allows)."""

from __future__ import annotations

from pathlib import Path

from services.kernel.config import Config, load_config


def _load(tmp_path: Path, project: str, user: str = "") -> Config:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "ai-coding.local.yaml").write_text(project)
    user_file = tmp_path / "user.yaml"
    user_file.write_text(user)
    return load_config(ws, env={}, user_path=user_file)


def test_a_project_raising_max_tool_iterations_is_held_at_the_ceiling_and_warned(tmp_path: Path) -> None:
    config = _load(tmp_path, "ai:\n  max_tool_iterations: 500\n")
    assert config.get("ai.max_tool_iterations") is None  # the default 50 holds
    assert any("max_tool_iterations" in w for w in config.warnings), config.warnings


def test_the_users_own_value_is_the_ceiling_and_lowering_is_taken(tmp_path: Path) -> None:
    raised = _load(tmp_path, "ai:\n  max_tool_iterations: 90\n", user="ai:\n  max_tool_iterations: 80\n")
    assert raised.get("ai.max_tool_iterations") == 80
    lowered = _load(tmp_path, "ai:\n  max_tool_iterations: 20\n", user="ai:\n  max_tool_iterations: 80\n")
    assert lowered.get("ai.max_tool_iterations") == 20
