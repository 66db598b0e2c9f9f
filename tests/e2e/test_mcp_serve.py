"""``ai-coding mcp serve`` handed tasks by the official Python SDK's client (``mcp`` 2.x
``ClientSession`` over stdio), against the real services (``ai-coding up``) and the fake model:
the task runs a turn that writes a file, progress notifications carry its steps, the result holds
the final text and the changed file; a caller cannot raise the permission mode above the user's;
a cancelled request interrupts the turn.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.session import ElicitationFnT
from mcp.client.stdio import stdio_client

from tests.support.cli_stack import Stack, cli, cli_stack

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
T = TypeVar("T")


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-mcpserve-", [{"text": "unused"}], ", max_retries: 0") as running:
        yield running


@pytest.fixture
def workspace(stack: Stack) -> Path:
    return Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))


def with_server(stack: Stack, workspace: Path, ceiling: str,
                body: Callable[[ClientSession], Awaitable[T]], elicitation: ElicitationFnT | None = None) -> T:
    """``body`` with a client session on ``ai-coding mcp serve -w WORKSPACE --permission-mode CEILING``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "clients.cli.entry", "mcp", "serve", "-w", str(workspace), "--permission-mode", ceiling],
        env=stack.env, cwd=str(workspace))

    async def main() -> T:
        async with stdio_client(params) as (read, write), ClientSession(read, write, elicitation_callback=elicitation) as session:
            await session.initialize()
            return await body(session)

    return anyio.run(main)


def write_then_answer(stack: Stack, name: str) -> None:
    stack.model.load_script([
        {"name": "write", "tool_calls": [{"name": "write", "arguments": {"path": name, "content": "hello\n"}}]},
        {"name": "answer", "text": f"I wrote {name}."}])


def test_a_client_hands_a_task_and_gets_progress_the_answer_and_the_changed_file(
        stack: Stack, workspace: Path) -> None:
    write_then_answer(stack, "hello.txt")
    steps: list[str] = []

    async def body(session: ClientSession) -> Any:
        listed = await session.list_tools()
        assert [t.name for t in listed.tools] == ["run_task"]

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append(message or "")

        return await session.call_tool("run_task", {"prompt": "write hello.txt", "permission_mode": "auto"},
                                       progress_callback=on_progress)

    result = with_server(stack, workspace, "auto", body)
    assert not result.is_error, result
    assert (workspace / "hello.txt").read_text() == "hello\n"
    data = result.structured_content
    assert data is not None
    assert data["status"] == "completed" and data["text"] == "I wrote hello.txt."
    assert data["changed_files"] == [{"path": "hello.txt", "change": "added"}]
    assert data["permission_mode"] == "auto"
    assert "I wrote hello.txt." in result.content[0].text
    assert any(m.startswith("running write") for m in steps), steps
    assert steps[-1] == "turn finished: completed", steps
    # The same session continues when the caller passes its id back.
    stack.model.load_script([{"name": "again", "text": "still here"}])

    async def again(session: ClientSession) -> Any:
        return await session.call_tool("run_task", {"prompt": "and now?", "session_id": data["session_id"]})

    second = with_server(stack, workspace, "auto", again)
    assert second.structured_content is not None
    assert second.structured_content["session_id"] == data["session_id"]
    messages = stack.model.chat_requests[-1].body["messages"]
    assert any("write hello.txt" in str(m.get("content")) for m in messages if m["role"] == "user")


def test_a_caller_asking_for_auto_gets_no_more_than_the_users_readonly(stack: Stack, workspace: Path) -> None:
    write_then_answer(stack, "refused.txt")

    async def body(session: ClientSession) -> Any:
        return await session.call_tool("run_task", {"prompt": "write refused.txt", "permission_mode": "auto"})

    result = with_server(stack, workspace, "readonly", body)
    assert not (workspace / "refused.txt").exists()
    data = result.structured_content
    assert data is not None and data["permission_mode"] == "readonly"
    assert data["changed_files"] == []
    assert any("the user allows at most readonly" in n for n in data["notes"]), data
    # The model saw the write refused, as a tool result.
    tool_results = [m for m in stack.model.chat_requests[-1].body["messages"] if m["role"] == "tool"]
    assert tool_results and "read-only mode" in str(tool_results[-1]["content"]), tool_results


def test_confirm_without_elicitation_refuses_the_change_and_says_why(stack: Stack, workspace: Path) -> None:
    write_then_answer(stack, "asked.txt")

    async def body(session: ClientSession) -> Any:
        return await session.call_tool("run_task", {"prompt": "write asked.txt"})

    result = with_server(stack, workspace, "confirm", body)
    assert not (workspace / "asked.txt").exists()
    data = result.structured_content
    assert data is not None and data["permission_mode"] == "confirm"
    assert any("cannot answer elicitations" in n for n in data["notes"]), data


@pytest.mark.parametrize("allow", [True, False])
def test_confirm_asks_the_caller_through_elicitation_and_follows_its_answer(
        stack: Stack, workspace: Path, allow: bool) -> None:
    write_then_answer(stack, "asked.txt")
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"allow": allow})

    async def body(session: ClientSession) -> Any:
        return await session.call_tool("run_task", {"prompt": "write asked.txt", "permission_mode": "confirm"})

    result = with_server(stack, workspace, "auto", body, elicitation=answer)
    assert len(asked) == 1 and "write" in asked[0], asked
    assert (workspace / "asked.txt").exists() is allow
    data = result.structured_content
    assert data is not None
    assert data["changed_files"] == ([{"path": "asked.txt", "change": "added"}] if allow else [])
    assert any("did not allow" in n for n in data["notes"]) is not allow, data


def test_a_workspace_outside_the_served_ones_is_refused(stack: Stack, workspace: Path) -> None:
    async def body(session: ClientSession) -> Any:
        return await session.call_tool("run_task", {"prompt": "look around", "workspace": str(stack.base)})

    seen = len(stack.model.chat_requests)
    result = with_server(stack, workspace, "auto", body)
    assert result.is_error
    assert "outside what this server may use" in result.content[0].text
    assert len(stack.model.chat_requests) == seen  # no turn ran


def test_cancelling_the_request_interrupts_the_turn(stack: Stack, workspace: Path) -> None:
    stack.model.load_script([{"name": "stall", "fault": {"kind": "stall", "seconds": 60}, "text": "late"}])
    started = anyio.Event()

    async def body(session: ClientSession) -> None:
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if (message or "").startswith("turn 1 started"):
                started.set()

        with anyio.move_on_after(90) as overall:
            async with anyio.create_task_group() as group:
                async def call() -> None:
                    await session.call_tool("run_task", {"prompt": "take your time"}, progress_callback=on_progress)

                group.start_soon(call)
                await started.wait()
                await anyio.sleep(0.5)  # in the model's stall
                group.cancel_scope.cancel()  # the SDK sends notifications/cancelled
        assert not overall.cancelled_caught, "the turn never started"
        # The server stays usable: a ping answers while it stops the turn.
        await session.send_ping()

    with_server(stack, workspace, "auto", body)
    # Well before the model's 60 s stall ends, the session is no longer running a turn.
    give_up = time.monotonic() + 30
    rows: list[dict[str, Any]] = []
    while time.monotonic() < give_up:
        listed = cli(stack.env, "sessions", "list", "-w", str(workspace), "--json")
        rows = json.loads(listed.stdout or "[]")
        if rows and not rows[0]["open"]:
            break
        time.sleep(0.5)
    assert rows and not rows[0]["open"], rows
