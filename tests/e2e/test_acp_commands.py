"""The editor's command list is the REPL's: every REPL slash command is listed in
``available_commands_update`` unless the editor does it itself, and each listed one really answers
in an editor's prompt (the loop's through RunCommand, /cost /mcp /memory /review as the REPL does);
a command nobody answers would say "unknown command" here (real services, the scripted fake model)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.acp import mapping
from clients.cli.slash import COMMANDS as REPL_COMMANDS
from clients.cli.slash import REVIEW_PROMPT
from services.fake_model import FakeModelServer
from tests.e2e.test_acp_bad_input import RawEditor
from tests.e2e.test_acp_session_controls import updates_until_answer
from tests.e2e.test_cli_process_control import env

__all__ = ["env"]


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([{"name": "hello", "match": "hello", "text": "hi"},
                          {"name": "review", "match": "Review the current git diff", "text": "No diff to review."}
                          ]) as server:
        yield server


def _said(updates: list[dict[str, Any]]) -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")


def test_the_editor_lists_every_repl_command_it_can_use_and_each_one_answers(
        env: dict[str, Any], model: FakeModelServer) -> None:
    workspace: Path = env["workspace"]
    with RawEditor(workspace) as editor:
        editor.initialize()
        editor.send({"id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}})
        updates, _, answer = updates_until_answer(editor, 2)
        sid = answer["result"]["sessionId"]
        listed = [u for u in updates if u["sessionUpdate"] == "available_commands_update"] or [
            editor.expect(lambda m: m.get("method") == "session/update"
                          and m["params"]["update"]["sessionUpdate"] == "available_commands_update")["params"]["update"]]
        names = [c["name"] for c in listed[0]["availableCommands"]]
        assert "jobs" in names
        assert names == [n for n in REPL_COMMANDS if n not in mapping.EDITOR_DOES]
        assert set(mapping.EDITOR_DOES) <= set(REPL_COMMANDS)  # no reason kept for a command that is gone

        editor.send({"id": 3, "method": "session/prompt",
                     "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}})
        assert updates_until_answer(editor, 3)[2]["result"] == {"stopReason": "end_turn"}
        ident = 10
        answers: dict[str, str] = {}
        for name in names:
            if name == "plan":  # plans with the model: its own tests drive it
                continue
            ident += 1
            editor.send({"id": ident, "method": "session/prompt",
                         "params": {"sessionId": sid, "prompt": [{"type": "text", "text": f"/{name}"}]}})
            updates, _, answer = updates_until_answer(editor, ident)
            assert answer.get("result") == {"stopReason": "end_turn"}, (name, answer)
            answers[name] = _said(updates)
            assert answers[name] and "unknown command" not in answers[name], (name, answers[name])
            assert not answers[name].startswith(f"/{name} failed"), answers[name]
        assert answers["jobs"] == "no background jobs in this session (job_start starts one)"
        assert "session" in answers["cost"] and "no turn yet" not in answers["cost"]
        assert answers["review"] == "No diff to review."
        assert REVIEW_PROMPT in str(model.chat_requests[-1].body["messages"])
        assert "no MCP servers" in answers["mcp"] and "memory" in answers["memory"]
        assert editor.hang_up(timeout=60) == 0
