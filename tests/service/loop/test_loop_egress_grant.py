"""A sandboxed command's connection to a host the allow-list does not name, asked of the user as an
approval on the turn's stream (tool ``network``): real loop, real tools service in
``tools.sandbox.network: proxy`` with real bwrap, an origin on 127.0.0.1 pinned as asked.test (a pin
is an address, not an allow-list entry). --auto-approve never answers it; nobody to ask = refused."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ai_coding.v1 import common_pb2, loop_pb2

from tests.service.loop.harness import Conversation, LoopStack, fake, make_stack, workspace
from tests.support.egress_sites import SECRET_PAGE, Origin, served

__all__ = ["fake", "make_stack", "workspace"]


@pytest.fixture
def web() -> Iterator[Origin]:
    yield from served()


def stack_for(make_stack: Callable[..., LoopStack], web: Origin) -> LoopStack:
    command = f"curl -sS --max-time 30 http://asked.test:{web.port}/hello"
    tools = {"tools": {"sandbox": {"network": "proxy", "allow_domains": []}},
             "net": {"pinned_hosts": {"asked.test": f"127.0.0.1:{web.port}"}}}
    return make_stack([{"match": "fetch", "tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
                       {"text": "done"}], with_tools=tools)


def run_answering(stack: LoopStack, decision: loop_pb2.ApprovalDecision.ValueType, *, interactive: bool
                  ) -> tuple[list[loop_pb2.ApprovalRequested], common_pb2.ToolResult]:
    session_id = stack.open(auto_approve=True, interactive=interactive).session_id
    asked: list[loop_pb2.ApprovalRequested] = []

    def answer(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "approval_requested":
            asked.append(event.approval_requested)
            conv.send(loop_pb2.ClientMessage(approval=loop_pb2.ApprovalReply(
                request_id=event.approval_requested.request_id, decision=decision)))

    events = stack.start(session_id, "fetch it").drain(answer)
    result = next(e.tool_finished for e in events if e.WhichOneof("event") == "tool_finished").result
    return asked, result


@pytest.mark.parametrize(("decision", "reaches"), [(loop_pb2.APPROVAL_DECISION_ALLOW_ONCE, True),
                                                   (loop_pb2.APPROVAL_DECISION_ALLOW_ALWAYS, True),
                                                   (loop_pb2.APPROVAL_DECISION_DENY, False)])
def test_an_unlisted_host_is_asked_even_under_auto_approve_and_the_answer_decides(
        make_stack: Callable[..., LoopStack], web: Origin, isolated_home: Path, decision: loop_pb2.ApprovalDecision.ValueType,
        reaches: bool) -> None:
    stack = stack_for(make_stack, web)
    asked, result = run_answering(stack, decision, interactive=True)
    assert [a.tool for a in asked] == ["network"]
    assert json.loads(asked[0].arguments_json)["host"] == "asked.test"
    assert f"asked.test:{web.port}" in asked[0].preview and "tools.sandbox.allow_domains" in asked[0].preview
    assert (SECRET_PAGE.decode() in result.output) is reaches, result.output
    assert web.paths() == (["/hello"] if reaches else [])
    if not reaches:
        assert "the user refused it" in result.output
        assert f"add `- asked.test:{web.port}` under tools.sandbox.allow_domains" in result.output


def test_with_nobody_to_ask_the_host_is_refused_with_the_config_line(
        make_stack: Callable[..., LoopStack], web: Origin, isolated_home: Path) -> None:
    stack = stack_for(make_stack, web)
    asked, result = run_answering(stack, loop_pb2.APPROVAL_DECISION_ALLOW_ALWAYS, interactive=False)
    assert asked == [] and SECRET_PAGE.decode() not in result.output
    assert f"asked.test:{web.port} is not in tools.sandbox.allow_domains" in result.output
    assert f"add `- asked.test:{web.port}` under tools.sandbox.allow_domains" in result.output
    assert web.paths() == []
