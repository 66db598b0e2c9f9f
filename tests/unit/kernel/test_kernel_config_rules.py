"""Every key the configuration schema knows has a declared project rule (services/kernel/config_rules.py):
this test walks the typed sections the services read and fails for a key with none, so the next key
added cannot let a project loosen what the user set. And the rules hold when a project tries."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.cli.supervisor import SupervisorConfig
from services.kernel.config import KNOWN_TOP_LEVEL_KEYS, load_config
from services.kernel.config_rules import LOWER_DEFAULTS, RULES, WHOLE_SECTIONS, Rule, declared
from services.kernel.netpolicy import NetConfig
from services.loop.compaction.settings import CompactionSettings
from services.loop.main import LoopConfig, SessionsConfig
from services.loop.model.settings import ModelSettings
from services.loop.policy.settings import LoopSettings
from services.loop.tracing.live import OtlpConfig
from services.memory.settings import MemorySettings
from services.tools.config import ToolsConfig

# The typed view each reader takes of its section (a new section's dataclass goes here).
SECTIONS: dict[str, type[Any]] = {
    "ai": LoopSettings, "loop": LoopConfig, "sessions": SessionsConfig, "tracing.otlp": OtlpConfig,
    "compaction": CompactionSettings, "tools": ToolsConfig, "memory": MemorySettings, "models.*": ModelSettings,
    "supervisor": SupervisorConfig, "net": NetConfig,
}
# Keys read raw, outside any dataclass.
RAW_KEYS = ("default_model", "hooks", "mcp", "endpoints", "plans.acceptance", "tracing.dir", "ai.websearch_api_key",
            "models.*.headers", "skills", "subagents", "traces")


def leaves(cls: type[Any], prefix: str) -> Iterator[tuple[str, Any]]:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            yield from leaves(hints[f.name], f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", f.default


def schema() -> dict[str, Any]:
    keys: dict[str, Any] = {k: None for k in RAW_KEYS}
    for section, cls in SECTIONS.items():
        keys.update(leaves(cls, f"{section}."))
    return keys


def test_every_key_the_schema_knows_has_a_declared_project_rule() -> None:
    missing, inherited = [], []
    for key in schema():
        found = declared(tuple(key.split(".")))
        if found is None:
            missing.append(key)
        elif len(found[0].split(".")) < len(key.split(".")) and found[0] not in WHOLE_SECTIONS:
            inherited.append(f"{key} (only {found[0]})")
    assert missing == [], f"declare a project rule in services/kernel/config_rules.py for: {missing}"
    assert inherited == [], f"declare these keys on their own: {inherited}"
    tops = {k.split(".")[0] for k in schema()} | {p.split(".")[0] for p in RULES}
    assert KNOWN_TOP_LEVEL_KEYS - {"ai_coding"} <= tops, KNOWN_TOP_LEVEL_KEYS - tops


def test_whole_sections_are_user_only_or_execution_and_lower_ceilings_are_the_readers_defaults() -> None:
    for pattern in WHOLE_SECTIONS:
        assert RULES[pattern] in (Rule.USER_ONLY, Rule.EXECUTION), pattern
    keys = schema()
    lowered = {p for p, r in RULES.items() if r is Rule.LOWER}
    assert lowered == set(LOWER_DEFAULTS)
    for dotted, ceiling in LOWER_DEFAULTS.items():
        assert keys[dotted] == ceiling, dotted
    for dotted, rule in RULES.items():
        if rule in (Rule.TRUE_WINS, Rule.FALSE_WINS):
            assert isinstance(keys[dotted], bool), dotted


@pytest.mark.parametrize(("project", "key", "kept"), [
    ("ai:\n  subagent_isolation: false\n", "ai.subagent_isolation", None),
    ("ai:\n  subagent_timeout_seconds: 6000\n", "ai.subagent_timeout_seconds", None),
    ("ai:\n  max_parallel_subagents: 64\n", "ai.max_parallel_subagents", None),
    ("ai:\n  subagent_max_iterations: 500\n", "ai.subagent_max_iterations", None),
    ("ai:\n  max_tool_iterations: 500\n", "ai.max_tool_iterations", None),
    ("ai:\n  max_tool_iterations: 0\n", "ai.max_tool_iterations", None),
    ("ai:\n  max_tool_iterations: 20\n", "ai.max_tool_iterations", 20),
    ("ai:\n  subagent_isolation: true\n", "ai.subagent_isolation", True),
    ("hooks:\n  plugin_dir: /ws/plug\n", "hooks.plugin_dir", None),
    ("ai:\n  stall_iterations: 9\n", "ai.stall_iterations", 9),
])
def test_a_project_may_only_tighten_the_subagent_and_iteration_limits(tmp_path: Path, project: str, key: str,
                                                                      kept: Any) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ai-coding.yaml").write_text(project)
    config = load_config(ws, env={"XDG_DATA_HOME": str(tmp_path / "data")}, user_data={})
    assert config.get(key) == kept
    assert (kept is None) == any(f"`{key}`" in w for w in config.warnings), config.warnings
