"""The hooks section is checked at load: points, the capability matrix, and Claude Code's format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.kernel.config import Config, load_config
from services.kernel.errors import ConfigError
from services.loop.hooks.config import Capability, parse_hooks
from services.loop.main import build_deps
from tests.support.trust import trust_workspace


def entry(**over: Any) -> dict[str, Any]:
    return {"name": "h", "point": "tool.before", "command": "true", **over}


def test_asking_tool_after_to_block_is_a_config_error_naming_the_entry() -> None:
    with pytest.raises(ConfigError) as err:
        parse_hooks({"events": [entry(name="fine"), entry(name="audit", point="tool.after", capabilities=["block"])]})
    assert "hooks.events[1] (audit)" in err.value.message and "tool.after cannot block" in err.value.message
    assert "Only tool.before" in err.value.hint


@pytest.mark.parametrize("point", ["turn.start", "step.before", "turn.end", "compact.before", "memory.harvest",
                                   "subagent.end", "stop.blocked"])
def test_only_tool_before_may_rewrite(point: str) -> None:
    with pytest.raises(ConfigError, match="cannot rewrite"):
        parse_hooks({"events": [entry(point=point, capabilities="rewrite")]})


@pytest.mark.parametrize(("bad", "says"), [
    ({"point": "tool.during"}, "unknown point 'tool.during'"),
    ({"capabilities": ["veto"]}, "unknown capability 'veto'"),
    ({"kind": "wasm"}, "unknown kind 'wasm'"),
    ({"command": ""}, "needs `command:`"),
    ({"timeout_seconds": 0}, "above 0"),
    ({"matcher": "(bash"}, "not a valid regex"),
    ({"point": "turn.end", "matcher": "bash"}, "matcher applies only"),
    ({"kind": "python"}, "needs `module:`"),
])
def test_a_wrong_entry_says_which_and_what(bad: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError, match=r"hooks.events\[0\]") as err:
        parse_hooks({"events": [entry(**bad)]})
    assert says in err.value.message


def test_the_loop_refuses_to_build_from_a_config_with_a_bad_hook() -> None:
    config = Config(data={"hooks": {"events": [entry(name="x", point="tool.after", capabilities=["block"])]},
                          "loop": {"memory": False, "mcp": False}})
    with pytest.raises(ConfigError, match=r"hooks.events\[0\] \(x\)"):
        build_deps(config)


def test_claude_code_entries_map_onto_our_points() -> None:
    settings, warnings = parse_hooks({
        "pre_tool_use": [{"matcher": "Bash|Edit", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]}],
        "PostToolUse": [{"hooks": [{"type": "command", "command": "fmt.sh"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "ctx.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "bell.sh"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify.sh"}]}],
    })
    by_event = {h.claude_event: h for h in settings.hooks}
    pre = by_event["PreToolUse"]
    assert pre.point == "tool.before" and Capability.BLOCK in pre.capabilities and pre.timeout_seconds == 5
    assert pre.matches("bash", "Bash") and pre.matches("edit", "Edit") and not pre.matches("read", "Read")
    assert pre.argv == ("/bin/sh", "-c", "guard.sh")
    assert by_event["PostToolUse"].point == "tool.after" and Capability.BLOCK not in by_event["PostToolUse"].capabilities
    assert by_event["UserPromptSubmit"].point == "turn.start" and by_event["Stop"].point == "turn.end"
    assert by_event["Stop"].timeout_seconds == 60
    assert warnings and "Notification" in warnings[0] and "ignored" in warnings[0]


def test_claude_code_events_we_lack_are_ignored_with_a_warning_as_the_loader_spells_them(tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    user.write_text("hooks:\n  Notification: [{hooks: [{type: command, command: x}]}]\n"
                    "  SubagentStop: [{hooks: [{type: command, command: y}]}]\n"
                    "  PreToolUse: [{matcher: Bash, hooks: [{type: command, command: z}]}]\n")
    config = load_config(None, user_path=user, env={})
    settings, warnings = parse_hooks(config.get("hooks"), config.source_of)
    assert [h.claude_event for h in settings.hooks] == ["PreToolUse"]
    assert sorted(w.split("'s ")[1].split()[0] for w in warnings) == ["Notification", "SubagentStop"]


def test_a_claude_code_prompt_hook_of_another_type_is_refused() -> None:
    with pytest.raises(ConfigError, match="only `type: command`"):
        parse_hooks({"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "is this safe?"}]}]})


def test_hooks_are_off_until_configured() -> None:
    assert parse_hooks(None)[0].hooks == () and parse_hooks({})[0].hooks == ()


def test_a_trusted_project_layer_may_not_add_python_hooks(tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    user.write_text("models: {}\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ai-coding.yaml").write_text(
        "hooks:\n  events:\n    - {name: inproc, point: turn.start, kind: python, module: plugin}\n")
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    trust_workspace(ws, env, user_path=user)
    config = load_config(ws, user_path=user, env=env)
    settings, warnings = parse_hooks(config.get("hooks"), config.source_of)
    assert settings.hooks == ()
    assert any("inproc" in w and "user config" in w for w in warnings)


def test_an_untrusted_project_layers_hooks_are_dropped_with_a_warning(tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    user.write_text("hooks:\n  events:\n    - {name: mine, point: turn.end, command: 'true'}\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ai-coding.yaml").write_text("hooks:\n  events:\n    - {name: theirs, point: turn.start, command: 'x'}\n")
    config = load_config(ws, user_path=user, env={})
    settings, _ = parse_hooks(config.get("hooks"), config.source_of)
    assert [h.name for h in settings.hooks] == ["mine"]
    assert any("ignored `hooks`" in w for w in config.warnings)
