"""The ACP adapter's pure decisions: stop reasons, permission answers, plans, prompts, replay, framing."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest

from clients.acp import history, mapping, prompt, rpc
from clients.cli import views

S = views.TurnStatus


@pytest.mark.parametrize(("status", "finish", "cancelled", "expected"), [
    (S.COMPLETED, "stop", False, "end_turn"),
    (S.COMPLETED, "length", False, "max_tokens"),
    (S.COMPLETED, "content_filter", False, "refusal"),
    (S.MAX_ITERATIONS, "tool_calls", False, "max_turn_requests"),
    (S.BUDGET, "stop", False, "max_tokens"),
    (S.INTERRUPTED, "", False, "cancelled"),
    (S.APPROVAL_STOP, "", False, "cancelled"),
    (S.COMPLETED, "stop", True, "cancelled"),
    (S.FAILED, "error", False, None),
])
def test_a_turn_status_maps_to_the_acp_stop_reason(status: views.TurnStatus, finish: str, cancelled: bool,
                                                     expected: str | None) -> None:
    assert mapping.stop_reason(status, finish, cancelled) == expected


@pytest.mark.parametrize(("outcome", "decision", "remember"), [
    ({"outcome": "selected", "optionId": "allow_once"}, views.Decision.ALLOW_ONCE, False),
    ({"outcome": "selected", "optionId": "allow_always"}, views.Decision.ALLOW_ALWAYS, False),
    ({"outcome": "selected", "optionId": "reject_once"}, views.Decision.DENY, False),
    ({"outcome": "selected", "optionId": "reject_always"}, views.Decision.DENY, True),
    ({"outcome": "cancelled"}, views.Decision.STOP, False),
    (None, views.Decision.STOP, False),
])
def test_each_permission_option_maps_to_our_decision(outcome: dict[str, str] | None, decision: views.Decision,
                                                     remember: bool) -> None:
    assert mapping.permission_answer(outcome) == mapping.Answer(decision, remember)


def test_an_edit_is_a_diff_at_its_absolute_path_and_a_write_has_no_old_text() -> None:
    call = mapping.tool_call("c1", "edit", json.dumps({"path": "a.py", "old_string": "x", "new_string": "y"}),
                             "", "/ws")
    assert call["kind"] == "edit" and call["locations"] == [{"path": "/ws/a.py"}]
    assert call["content"] == [{"type": "diff", "path": "/ws/a.py", "oldText": "x", "newText": "y"}]
    write = mapping.tool_call("c2", "write", json.dumps({"path": "/abs/b.txt", "content": "new"}), "", "/ws")
    assert write["content"] == [{"type": "diff", "path": "/abs/b.txt", "oldText": None, "newText": "new"}]
    assert mapping.tool_call("c3", "bash", "{broken", "", "/ws")["rawInput"] == {"raw": "{broken"}


def test_the_todo_list_is_the_plan_without_dropped_items() -> None:
    items = (views.TaskItem("1", "read", "completed"), views.TaskItem("2", "fix", "in_progress"),
             views.TaskItem("3", "old", "dropped"), views.TaskItem("4", "stuck", "blocked"))
    assert [(e["content"], e["status"]) for e in mapping.plan(items)["entries"]] == [
        ("read", "completed"), ("fix", "in_progress"), ("stuck", "pending")]


def test_only_loop_commands_are_slash_commands() -> None:
    assert mapping.slash("/permissions auto") == ("permissions", "auto")
    assert mapping.slash("/plan ship it") == ("plan", "ship it")
    assert mapping.slash("/usr/bin/env is odd") is None
    assert mapping.slash("please /status") is None


def test_prompt_blocks_become_text_and_bounded_attachments() -> None:
    png = base64.b64encode(b"\x89PNG....").decode()
    given = prompt.convert([
        {"type": "text", "text": "look at this"},
        {"type": "resource", "resource": {"uri": "file:///ws/unsaved.py", "text": "print(1)\n"}},
        {"type": "resource_link", "uri": "file:///ws/README.md", "name": "README.md"},
        {"type": "image", "mimeType": "image/png", "data": png},
        {"type": "image", "mimeType": "image/tiff", "data": png},
        {"type": "audio", "mimeType": "audio/wav", "data": ""},
    ])
    assert given.text == "look at this\n(the user points at /ws/README.md)"
    assert [(a.path, a.mime_type) for a in given.attachments] == [("/ws/unsaved.py", "text/plain"),
                                                                  ("image-2", "image/png")]
    assert len(given.notes) == 2


def test_a_saved_session_replays_as_chunks_and_tool_calls() -> None:
    messages = [
        {"role": "system", "content": "you are"},
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "ok", "reasoning": "hmm",
         "toolCalls": [{"id": "t1", "name": "edit", "arguments": json.dumps(
             {"path": "a", "old_string": "1", "new_string": "2"})}]},
        {"role": "tool", "toolCallId": "t1", "content": "edited a"},
        {"role": "assistant", "content": "", "toolCalls": [{"id": "t2", "name": "bash", "arguments": "{}"}]},
    ]
    kinds = [(u["sessionUpdate"], u.get("status")) for u in history.replay(json.dumps(messages), "/ws")]
    assert kinds == [("user_message_chunk", None), ("agent_thought_chunk", None), ("agent_message_chunk", None),
                     ("tool_call", "in_progress"), ("tool_call_update", "completed"), ("tool_call", "in_progress"),
                     ("tool_call_update", "failed")]


@pytest.mark.parametrize(("line", "code"), [
    (b"{nope", rpc.PARSE_ERROR), (b"[]", rpc.INVALID_REQUEST), (b'{"id": 1, "method": "x"}', rpc.INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', rpc.INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]}', rpc.INVALID_PARAMS),
])
def test_a_bad_line_is_classified_with_its_json_rpc_error(line: bytes, code: int) -> None:
    message, error = rpc.classify(line)
    assert message is None and error is not None and error.code == code


def test_the_adapter_modules_answering_initialize_do_not_import_grpc_openai_or_mcp() -> None:
    code = ("import sys, clients.acp.main, clients.acp.mapping, clients.acp.rpc; "
            "print(sorted(m for m in ('grpc', 'openai', 'mcp') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_an_editors_mcp_servers_become_gateway_entries_and_bad_ones_say_why() -> None:
    from clients.acp import mcp

    entries, problems = mcp.entries([
        {"name": "files", "command": "npx", "args": ["-y", "srv"], "env": [{"name": "K", "value": "v"}]},
        {"type": "http", "name": "api x", "url": "https://h/mcp", "headers": [{"name": "A", "value": "b"}]},
        {"type": "sse", "name": "old", "url": "https://h/sse", "headers": []},
        {"name": "nothing"},
        {"type": "acp", "name": "inproc", "id": "1"},
    ])
    assert entries == [
        {"name": "files", "type": "local", "command": ["npx", "-y", "srv"], "environment": {"K": "v"}},
        {"name": "api-x", "type": "remote", "url": "https://h/mcp", "transport": "streamable_http", "headers": {"A": "b"}},
        {"name": "old", "type": "remote", "url": "https://h/sse", "transport": "sse"},
    ]
    assert len(problems) == 2 and "no command" in problems[0] and "'acp'" in problems[1]


def test_an_editors_mcp_server_is_named_for_its_session_within_the_gateways_limit() -> None:
    from clients.acp import mcp
    from services.mcp_gateway.settings import _NAME

    server = {"name": "x" * 60, "command": "srv"}
    first = mcp.entries([server], "s-one")[0][0]["name"]
    assert first == mcp.entries([server], "s-one")[0][0]["name"]  # a reload of the session finds it again
    assert first != mcp.entries([server], "s-two")[0][0]["name"]  # each session runs its own copy
    assert _NAME.match(first) and first.startswith("x" * 41 + "-")


@pytest.mark.parametrize(("saved", "failed"), [
    ("denied_by_user: the user refused", True), ("cancelled: the user stopped the turn", True),
    ("echo: ping", False), ("edited a.py (1 replacement)", False), ("  never_read: read it first", True),
])
def test_a_replayed_result_is_failed_only_when_it_reads_as_an_error_code(saved: str, failed: bool) -> None:
    assert history.failed(saved) is failed


def test_a_network_approval_is_a_fetch_titled_by_its_url() -> None:
    call = mapping.tool_call("c1", "network", '{"host": "pypi.org", "port": 443, "url": "https://pypi.org:443"}',
                             "", "/ws")
    assert call["kind"] == "fetch" and call["title"] == "network · https://pypi.org:443"
