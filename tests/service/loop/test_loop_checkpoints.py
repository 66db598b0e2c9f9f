"""The checkpoints feature on a real loop and tools service: /undo takes back the last turn (the
one before it next), /redo re-applies it, a file the user changed since stays and is named, and
/checkpoints lists the steps with their files; the model has no restore tool."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import grpc
from ai_coding.v1 import loop_pb2, loop_pb2_grpc, tools_pb2, tools_pb2_grpc

from services.fake_model import FakeModelServer
from services.kernel.config import Config
from services.kernel.endpoints import AuthSettings, Endpoint
from services.kernel.server import create_server
from services.loop.core.sessions import SessionStore
from services.loop.main import build as build_loop
from services.tools.main import build as build_tools
from tests.service.loop.harness import (
    Conversation,
    LoopStack,
    ServiceThread,
    fake,
    make_stack,
    model_config,
    workspace,
)
from tests.support.plan_scripts import todo
from tests.support.trees import tree_hash

__all__ = ["fake", "make_stack", "workspace"]
TOKEN = "remote-tools-token"


def bash(command: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def command(stack: LoopStack, session: str, name: str, args: str = "") -> tuple[str, dict[str, object]]:
    reply = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=session, command=name, args=args),
                                  timeout=120)
    return reply.text, json.loads(reply.data_json or "{}")


def test_undo_takes_back_turn_by_turn_redo_reapplies_and_the_users_edit_is_kept(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    (workspace / "keep.txt").write_text("k\n")
    stack = make_stack([bash("rm a.txt && mkdir -p out && echo 1 > out/one"), {"text": "turn 1 done"},
                        bash("echo 2 > out/two && chmod 700 out"), {"text": "turn 2 done"}], with_tools=True)
    start = tree_hash(workspace)
    session, _ = stack.turn("first")
    after_one = tree_hash(workspace)
    stack.turn("second", session)
    after_two = tree_hash(workspace)
    (workspace / "keep.txt").write_text("the user's\n")

    text, data = command(stack, session, "undo")
    assert data.get("kept") == ["keep.txt"] and "keep.txt" in text, text
    (workspace / "keep.txt").write_text("k\n")
    assert tree_hash(workspace) == after_one
    command(stack, session, "undo", "--force")
    assert tree_hash(workspace) == start and (workspace / "a.txt").read_text() == "a\n"

    text, _ = command(stack, session, "redo")
    assert tree_hash(workspace) == after_one, text
    assert (command(stack, session, "redo")[1]).get("error") == "nothing_to_redo"
    listed, data = command(stack, session, "checkpoints")
    assert "1.1" in listed and "2.1" in listed and "out/two" in listed, listed
    assert after_two != after_one
    _, pruned = command(stack, session, "checkpoints", "prune")
    dropped = pruned.get("dropped")
    assert isinstance(dropped, int) and dropped >= 4
    assert command(stack, session, "undo")[1].get("error") == "nothing_to_undo"


def test_the_model_cannot_call_a_restore(make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([{"tool_calls": [{"name": "checkpoint_restore", "arguments": {"to": "cp-000001"}}]},
                        {"text": "ok"}], with_tools=True)
    (workspace / "f.txt").write_text("f\n")
    _, events = stack.turn("restore it")
    request = stack.fake.chat_requests[0].body
    names = [t["function"]["name"] for t in request.get("tools", [])]
    assert names and not [n for n in names if "restore" in n or "rewind" in n or "undo" in n]
    finished = next(e.tool_finished for e in events if e.WhichOneof("event") == "tool_finished")
    assert not finished.result.ok and "unknown" in finished.result.error.code


def test_the_same_undo_works_with_the_tools_service_on_a_remote_host_over_tls(
        short_dir: Path, workspace: Path, fake: FakeModelServer, isolated_home: Path, tmp_path: Path) -> None:
    """The store lives with the tools service: reached over TCP with TLS and a token, /undo restores."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "k.pem"),
                    "-out", str(tmp_path / "c.pem"), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    services = ServiceThread()
    try:
        tools = services.run(create_server(
            Endpoint("tools", "tcp", host="127.0.0.1", port=0, auth=AuthSettings(
                token=TOKEN, tls_cert=str(tmp_path / "c.pem"), tls_key=str(tmp_path / "k.pem"))),
            build_tools(Config(data={"tools": {"sandbox": {"mode": "bwrap"}}}))))
        services.running.append(tools)
        port = int(tools.address.rsplit(":", 1)[1])
        fake.load_script([bash("rm -r src && echo new > added.txt"), {"text": "done"}])
        data = model_config(fake.url)
        data["endpoints"] = {"tools": f"tcp://127.0.0.1:{port}", "auth": {
            "token": TOKEN, "tls_ca": str(tmp_path / "c.pem"), "server_name": "localhost"}}
        services.serve(f"unix:{short_dir}/loop.sock", build_loop(Config(data=data)))
        channel = grpc.insecure_channel(f"unix:{short_dir}/loop.sock")
        stub = loop_pb2_grpc.AgentLoopStub(channel)
        (workspace / "src").mkdir()
        (workspace / "src" / "m.py").write_text("x = 1\n")
        before = tree_hash(workspace)
        session = stub.OpenSession(loop_pb2.OpenSessionLoopRequest(workspace=str(workspace), auto_approve=True),
                                   timeout=30).session_id
        Conversation(stub, loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=session, input="go"))).drain()
        assert not (workspace / "src").exists()
        reply = stub.RunCommand(loop_pb2.RunCommandRequest(session_id=session, command="undo"), timeout=120)
        assert tree_hash(workspace) == before, reply.text
        channel.close()
    finally:
        services.close()


def test_a_plan_step_that_does_not_pass_offers_its_rollback_and_the_rewind_takes_it_back(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "[plan] Topic: make it", "tool_calls": [todo(goal="make it", add=[{"content": "make made.txt"}])]},
        {"match": "[ ] 1. make made.txt", "text": "Planned."},
        {"match": "[plan step 1/1]", "tool_calls": [{"name": "bash", "arguments": {"command": "echo x > made.txt"}}]},
        {"match": "(no output)", "text": "Made it, not marking it."},
    ], with_tools=True)
    session = stack.open().session_id
    events = Conversation(stack.stub, loop_pb2.ClientMessage(plan=loop_pb2.StartPlan(
        session_id=session, topic="make it")), timeout=120).drain()
    offers = [e.notice.text for e in events if e.WhichOneof("event") == "notice" and "/rewind" in e.notice.text]
    assert len(offers) == 1 and "plan step 1/1 ended stalled" in offers[0], offers
    target = offers[0].split("/rewind ", 1)[1].split()[0]
    assert (workspace / "made.txt").exists()
    command(stack, session, "rewind", f"{target} --code")
    assert not (workspace / "made.txt").exists()


def _session_file(workspace: Path, session: str) -> dict[str, object]:
    """The session's meta as a restarted loop reads it (snapshot and journal)."""
    return SessionStore(workspace).read(session)[0].meta()


def test_a_conversation_rewound_to_turn_2_sends_exactly_the_request_turn_3_sent(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    """After turn 2: a turn 3 (a todo, an acceptance item), a /compact, a /plan run (receipts) as
    turn 4. Rewound to turn 2, the same prompt sends byte for byte the request turn 3 sent, and the
    session file holds none of what came after turn 2."""
    third = [{"match": "again from turn two", "tool_calls": [todo(add=[{"content": "gamma task"}])]},
             {"text": "three"}]
    stack = make_stack([
        {"tool_calls": [todo(add=[{"content": "alpha task"}])]}, {"text": "one"}, {"text": "two"},
        *third,
        {"match": "Write the updated checkpoint", "text": "A summary of the first turns."},
        {"match": "[plan] Topic: make it", "tool_calls": [todo(goal="make it", add=[{"content": "make made.txt"}])]},
        {"match": "[ ] 1. make made.txt", "text": "Planned."},
        {"match": "[plan step 1/1]", "text": "Not marking it."},
        *third,
    ], with_tools=True)
    session, _ = stack.turn("turn one")
    stack.turn("turn two", session)
    before = len(stack.fake.chat_requests)
    stack.turn("again from turn two", session)
    sent_by_turn_3 = stack.fake.chat_requests[before].body
    command(stack, session, "accept", '"it holds" -- true')
    assert command(stack, session, "compact")[1].get("changed") is True
    Conversation(stack.stub, loop_pb2.ClientMessage(plan=loop_pb2.StartPlan(session_id=session, topic="make it")),
                 timeout=120).drain()
    saved = _session_file(workspace, session)
    assert saved.get("plan") and saved.get("acceptance"), sorted(saved)
    assert saved.get("rewindValues"), sorted(saved)  # every turn end's slot values survive a loop restart

    text, data = command(stack, session, "rewind", "2 --conversation")
    assert data.get("conversation_turns") == 2, text
    saved = _session_file(workspace, session)
    assert "plan" not in saved and "acceptance" not in saved, sorted(saved)
    assert saved["turns"] == 2 and "gamma" not in json.dumps(saved["taskState"])

    before = len(stack.fake.chat_requests)
    stack.turn("again from turn two", session)
    assert stack.fake.chat_requests[before].body == sent_by_turn_3
    got = stack.stub.GetSession(loop_pb2.GetSessionRequest(workspace=str(workspace), session_id=session), timeout=30)
    said = [m.get("content") for m in json.loads(got.messages_json) if m.get("role") == "user"]
    assert said == ["turn one", "turn two", "again from turn two"], said


def test_opening_a_session_drops_the_checkpoints_of_the_workspaces_deleted_sessions(
        make_stack: Callable[..., LoopStack], workspace: Path, short_dir: Path, isolated_home: Path) -> None:
    stack = make_stack([bash("echo kept > kept.txt"), {"text": "done"}], with_tools=True)
    kept, _ = stack.turn("a session that stays")
    tools = tools_pb2_grpc.ToolRuntimeStub(grpc.insecure_channel(f"unix:{short_dir}/tools.sock"))
    tools.OpenSession(tools_pb2.OpenSessionRequest(session_id="deleted-one", workspace_root=str(workspace)),
                      timeout=30)
    tools.CreateCheckpoint(tools_pb2.CreateCheckpointRequest(session_id="deleted-one", label="x"), timeout=30)
    tools.CloseSession(tools_pb2.CloseSessionRequest(session_id="deleted-one"), timeout=30)  # its loop is gone

    def sessions_with_checkpoints() -> set[str]:  # the store's refs, every session's
        found = set()
        for ref in isolated_home.glob("**/ai-coding/checkpoints/*/refs/cp-*.json"):
            try:
                found.add(json.loads(ref.read_text())["session_id"])
            except FileNotFoundError:
                continue  # pruned between the listing and the read: the wait below is for exactly that
        return found

    assert sessions_with_checkpoints() == {kept, "deleted-one"}
    stack.open()  # another session opens: the workspace's sessions are `kept` and this one
    deadline = time.monotonic() + 30
    while "deleted-one" in sessions_with_checkpoints() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sessions_with_checkpoints() == {kept}
