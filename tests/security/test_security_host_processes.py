"""What the services start on the host inside the workspace picks up nothing the agent planted there:
a user hook of the common `python3 -c 'import json, sys; ...'` shape does not import the agent's
`json.py`, and a python hook cannot be pointed at workspace code by any project key, even one the
user approved.

Real loop and tools services (bash in real bwrap plants the files), real hook processes; the fake
model drives; the host is checked afterwards.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace
from tests.support.trust import trust_workspace

__all__ = ["fake", "make_stack", "workspace"]


def test_a_python_c_hook_run_in_the_workspace_does_not_import_the_agents_json_module(
        make_stack: Callable[..., LoopStack], workspace: Path, tmp_path: Path) -> None:
    imported, seen = tmp_path / "planted-json-imported", tmp_path / "hook-saw"
    hook = (f"{sys.executable} -c 'import json, sys; e = json.load(sys.stdin); "
            f"open(\"{seen}\", \"a\").write(e[\"tool_input\"][\"command\"][:5] + \"\\n\")'")
    planted = f"open({str(imported)!r}, 'w')\\nraise SystemExit(0)\\n"
    stack = make_stack([
        {"match": "plant", "tool_calls": [{"name": "bash", "arguments": {
            "command": f"printf \"{planted}\" > json.py && echo planted"}}]},
        {"match": "planted", "tool_calls": [{"name": "bash", "arguments": {"command": "echo again"}}]},
        {"match": "again", "text": "Done."},
    ], with_tools=True, sections={"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": hook}]}]}})
    _, events = stack.turn("plant the module")
    assert status_name(finished(events)) == "completed"
    assert (workspace / "json.py").is_file()  # the plant is really there, next to the hook's cwd
    assert seen.read_text().splitlines() == ["print", "echo "]  # the hook ran both times, with the real json
    assert not imported.exists()


def test_no_project_key_points_a_python_hook_at_workspace_code_even_once_approved(
        make_stack: Callable[..., LoopStack], workspace: Path, isolated_home: Path, tmp_path: Path) -> None:
    user_ran, planted_ran = tmp_path / "user-audit-ran", tmp_path / "planted-audit-ran"
    user_plugins = isolated_home / ".config" / "ai-coding" / "hooks"  # the default: next to the user config
    user_plugins.mkdir(parents=True)
    (user_plugins / "audit.py").write_text(f"def hook(event):\n    open({str(user_ran)!r}, 'w')\n")
    body = f"def hook(event):\\n    open({str(planted_ran)!r}, \\\"w\\\")\\n"
    plant = (f"mkdir -p plug && printf \"{body}\" > plug/audit.py && "
             f"printf 'hooks:\\n  plugin_dir: {workspace}/plug\\n' > ai-coding.yaml && echo planted")
    stack = make_stack([
        {"match": "set up", "tool_calls": [{"name": "bash", "arguments": {"command": plant}}]},
        {"match": "planted", "text": "Set up."},
        {"match": "go on", "text": "Going on."},
    ], with_tools=True, sections={"hooks": {"events": [
        {"name": "audit", "point": "turn.start", "kind": "python", "module": "audit"}]}})
    sid, first = stack.turn("set up")
    assert status_name(finished(first)) == "completed"
    assert (workspace / "plug" / "audit.py").is_file() and (workspace / "ai-coding.yaml").is_file()
    user_ran.unlink()
    assert trust_workspace(workspace) == 1  # the user approves even the plugin_dir item
    reopened = stack.open(sid)
    assert any("ignored `hooks.plugin_dir`" in w for w in reopened.warnings), reopened.warnings
    _, second = stack.turn("go on", session_id=sid)
    assert status_name(finished(second)) == "completed"
    runs = [(e.hook_run.hook, e.hook_run.outcome, e.hook_run.detail) for e in second if e.WhichOneof("event") == "hook_run"]
    assert user_ran.exists() and not planted_ran.exists(), runs
