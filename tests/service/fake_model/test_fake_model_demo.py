"""The demo assets: the bundled project really fails, and the bundled script really fixes it.

A minimal stand-in agent (real file reads and edits, real ``python3`` subprocess)
follows the script's tool calls through the real openai client, so a script
whose ``match`` no longer fits what the tools return fails here first.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI

from services.fake_model import FakeModelServer, load_script_file
from services.fake_model.demo import DEMO_PROMPT, copy_demo_project, demo_project_dir, demo_script_path


def run_tests(workspace: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["python3", "-m", "unittest", "-q"], cwd=workspace, capture_output=True, text=True,
                          timeout=60)


def execute(workspace: Path, name: str, arguments: dict[str, Any]) -> str:
    """Do what the tool service would do, for real, with a plain-text result."""
    if name == "read":
        lines = (workspace / arguments["path"]).read_text(encoding="utf-8").splitlines()
        return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines, start=1))
    if name == "edit":
        path = workspace / arguments["path"]
        text = path.read_text(encoding="utf-8")
        assert text.count(arguments["old_string"]) == 1
        path.write_text(text.replace(arguments["old_string"], arguments["new_string"]), encoding="utf-8")
        return f"Edited {arguments['path']}: -{arguments['old_string']} +{arguments['new_string']}"
    if name == "bash":
        done = subprocess.run(arguments["command"], shell=True, cwd=workspace, capture_output=True, text=True,
                              timeout=arguments.get("timeout_seconds", 60))
        return f"{done.stdout}{done.stderr}\nexit code {done.returncode}"
    raise AssertionError(f"the demo script calls an unexpected tool {name!r}")


async def replay(server: FakeModelServer, workspace: Path) -> tuple[list[str], str]:
    """Run the turn: stream a step, run its tool calls, append paired tool messages, until no calls remain."""
    client: Any = AsyncOpenAI(base_url=server.url, api_key="x", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."},
                                      {"role": "user", "content": DEMO_PROMPT}]
    tools_used: list[str] = []
    async with client:
        for _ in range(10):
            async with client.chat.completions.stream(model="fake-model", messages=messages) as stream:
                async for _event in stream:
                    pass
                message = (await stream.get_final_completion()).choices[0].message
            calls = message.tool_calls or []
            messages.append({"role": "assistant", "content": message.content, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.function.name,
                                                              "arguments": c.function.arguments}} for c in calls]})
            if not calls:
                return tools_used, message.content or ""
            for call in calls:
                tools_used.append(call.function.name)
                result = execute(workspace, call.function.name, json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("the demo script did not finish within 10 steps")


def test_the_bundled_project_has_a_failing_test_runnable_without_pytest(tmp_path: Path) -> None:
    workspace = copy_demo_project(tmp_path / "demo")
    assert sorted(p.name for p in workspace.iterdir()) == sorted(
        p.name for p in demo_project_dir().iterdir() if p.is_file())
    done = run_tests(workspace)
    assert done.returncode == 1
    assert "FAILED (failures=1)" in done.stderr and "test_inclusive_range_sum_counts_both_ends" in done.stderr


def test_the_demo_script_reads_fixes_and_tests_the_project_then_reports(tmp_path: Path) -> None:
    workspace = copy_demo_project(tmp_path / "demo")
    with FakeModelServer(demo_script_path()) as server:
        tools_used, report = asyncio.run(replay(server, workspace))
        assert server.errors == []
        assert server.remaining() == 0
    assert tools_used == ["read", "edit", "bash"]
    assert "range(start, end + 1)" in (workspace / "calc.py").read_text(encoding="utf-8")
    assert run_tests(workspace).returncode == 0
    assert "calc.py" in report and "OK" in report
    assert (demo_project_dir() / "calc.py").read_text(encoding="utf-8").count("range(start, end))") == 1


def test_the_demo_script_steps_use_the_tool_argument_shapes_of_the_tool_service() -> None:
    allowed = {"read": {"path", "offset", "limit"}, "edit": {"path", "old_string", "new_string", "replace_all"},
               "bash": {"command", "timeout_seconds"}, "write": {"path", "content"}}
    calls = [c for step in load_script_file(demo_script_path()).steps for c in step.tool_calls]
    assert calls
    for call in calls:
        assert set(json.loads(call.arguments_json)) <= allowed[call.name]
