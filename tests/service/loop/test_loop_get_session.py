"""GetSession of a session larger than one gRPC message: paged, nothing lost, any client channel."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ai_coding.v1 import loop_pb2

from clients.cli.connection import run
from clients.cli.connection.loop import LoopClient
from clients.cli.session_views import SessionDetail
from services.kernel.endpoints import parse_endpoint
from services.loop.core.sessions import SessionStore
from tests.service.loop.harness import LoopStack

GRPC_DEFAULT_LIMIT = 4 * 1024 * 1024


def _long_session(workspace: Path, megabytes: int) -> tuple[str, int]:
    """A saved session of about ``megabytes`` of messages (distinct bodies), and its message count."""
    store = SessionStore(workspace)
    session = store.create("fake")
    session.messages.append({"role": "user", "content": "start of a long session"})
    n = 0
    while sum(len(str(m.get("content") or "")) for m in session.messages) < megabytes * 1_000_000:
        cid = f"c{n}"
        session.messages += [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "read", "arguments": json.dumps({"n": n})}}]},
            {"role": "tool", "tool_call_id": cid, "content": f"body {n} " + "y" * 20_000}]
        n += 1
    session.messages.append({"role": "assistant", "content": "the last answer"})
    store.compact(session)
    return session.id, len(session.messages)


def test_a_session_over_4_mb_comes_back_whole_in_pages_each_under_the_grpc_default_limit(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    sid, count = _long_session(workspace, 6)
    stack = make_stack()  # its test channel keeps gRPC's default 4 MB receive limit
    pages, following = [], 0
    while True:
        response = stack.stub.GetSession(loop_pb2.GetSessionRequest(
            workspace=str(workspace), session_id=sid, from_message=following), timeout=30)
        assert response.ByteSize() < GRPC_DEFAULT_LIMIT
        pages.append(json.loads(response.messages_json))
        if not response.next_message:
            break
        assert response.next_message > following
        following = response.next_message
    assert len(pages) > 1
    messages = [m for page in pages for m in page]
    assert len(messages) == count
    assert messages[0]["content"] == "start of a long session" and messages[-1]["content"] == "the last answer"
    assert [m["content"].split(" ")[1] for m in messages if m["role"] == "tool"] == [
        str(n) for n in range((count - 2) // 2)]  # every body once, in order


def test_the_cli_client_reassembles_a_long_session_from_its_pages(make_stack: Callable[..., LoopStack],
                                                                  workspace: Path, short_dir: Path) -> None:
    sid, count = _long_session(workspace, 5)
    make_stack()

    async def fetch() -> SessionDetail:
        client = LoopClient(parse_endpoint("loop", f"unix:{short_dir}/loop.sock"))
        return await client.get_session(str(workspace), sid)

    detail = run(fetch())
    messages = json.loads(detail.messages_json)
    assert len(messages) == count and detail.summary.message_count == count
    assert messages[-1]["content"] == "the last answer"
