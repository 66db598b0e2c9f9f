"""The REPL learns a background child's run from the subAgent call's own result, not only from the child's
SubagentStarted (which can come after the parent's turn ended, once the child's worktree is made)."""

from __future__ import annotations

import json

from clients.cli import views
from clients.cli.repl.streams import background_run


def result(tool: str = "subAgent", ok: bool = True, data: object = None) -> views.ToolResult:
    return views.ToolResult(call_id="c1", tool=tool, ok=ok, data_json="" if data is None else json.dumps(data))


def test_a_background_subagent_result_names_its_run() -> None:
    assert background_run(result(data={"run_id": "sa-1", "background": True})) == "sa-1"


def test_anything_else_names_none() -> None:
    assert background_run(result(data={"run_id": "sa-1", "background": False})) == ""  # a foreground child
    assert background_run(result(data={"run_id": "sa-1"})) == ""
    assert background_run(result(tool="bash", data={"run_id": "sa-1", "background": True})) == ""
    assert background_run(result(ok=False, data={"run_id": "sa-1", "background": True})) == ""
    assert background_run(result(data={"run_id": 7, "background": True})) == ""
    assert background_run(result(data=["sa-1"])) == ""
    assert background_run(views.ToolResult(tool="subAgent", ok=True, data_json="{not json")) == ""
