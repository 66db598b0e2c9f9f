"""A user config whose hook asks a point for what it cannot do stops the services at start, naming it."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.cli_stack import cli


def test_up_refuses_a_config_asking_tool_after_to_block_and_names_the_entry(tmp_path: Path, short_dir: Path) -> None:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    config = tmp_path / "config.yaml"
    config.write_text("models:\n  default: {provider: generic, model: m, base_url: 'http://127.0.0.1:9/v1', "
                      "api_key: x}\nhooks:\n  events:\n    - {name: audit, point: tool.after, capabilities: [block], "
                      "command: 'true'}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AI_CODING_", "XDG_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               AI_CODING_RUNTIME_DIR=str(short_dir / "run"), AI_CODING_CONFIG=str(config))
    try:
        up = cli(env, "up")
        assert up.returncode != 0
        out = up.stdout + up.stderr
        assert "hooks.events[0] (audit): point tool.after cannot block" in out, out
        assert "Only tool.before may block or rewrite" in out
    finally:
        cli(env, "down", timeout=60)
