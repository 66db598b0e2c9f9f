"""Tools that run only as MCP tasks (``execution.taskSupport: required``).

The task-augmented call of MCP 2025-11-25, which the servers that offer such tools speak
(server-everything's ``simulate-research-query``; in the 2026-07-28 revision tasks moved to an
extension the ``mcp`` 2.x SDK does not implement yet, so the gateway asks for 2025-11-25):

1. ``tools/call`` with ``task: {ttl}`` answers at once with the task (``CreateTaskResult``);
2. ``tasks/get`` every ``pollInterval`` (at least :data:`MIN_POLL_S`): each new ``statusMessage``
   becomes a progress chunk on the call's stream;
3. at ``completed``/``failed``/``cancelled`` (or ``input_required``, whose questions arrive
   through it as elicitations), ``tasks/result`` gives the tool's ``CallToolResult``.

When the caller stops waiting (the user interrupted the turn, the call timed out), ``tasks/cancel``
goes to the server before the call ends, so the task does not run on behind it.

The SDK (``mcp`` 2.3) has no public call for step 1: ``ClientSession.call_tool`` builds its own
params (no ``task``) and ``send_request`` validates a ``tools/call`` answer as a ``CallToolResult``;
its public ``ResultClaim`` extensions hook only the 2026-07-28 wire, and the Tasks extension of that
revision has no Python package. :func:`send_task_call` is the one place that uses the SDK's private
dispatcher; ``tests/unit/mcp_gateway/test_mcp_gateway_task_adapter.py`` fails when the SDK changes
what it relies on (or gains the public call, so this can move to it).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types

log = logging.getLogger("ai_coding.mcp_gateway.tasks")

TTL_MS = 15 * 60 * 1000
MIN_POLL_S = 0.2
MAX_POLL_S = 5.0
TERMINAL = frozenset({"completed", "failed", "cancelled"})
CANCEL_BOUND_S = 5.0

Report = Callable[[float, str], Awaitable[None]]


def poll_seconds(task: Any) -> float:
    """How long to wait before the next ``tasks/get``: the server's hint, bounded."""
    hint = getattr(task, "poll_interval", None)
    seconds = (hint / 1000.0) if isinstance(hint, int | float) and hint > 0 else 1.0
    return min(MAX_POLL_S, max(MIN_POLL_S, seconds))


def is_task_only(tool: Any) -> bool:
    execution = getattr(tool, "execution", None)
    return execution is not None and getattr(execution, "task_support", None) == "required"


class TaskCallUnsupported(RuntimeError):
    """The installed SDK no longer has what :func:`send_task_call` relies on."""


async def send_task_call(session: Any, tool: str, arguments: dict[str, Any]) -> types.CreateTaskResult:
    """Step 1: the task-augmented ``tools/call`` on an SDK ``ClientSession``, answered by the task.

    Not ``session.send_request``: it checks every tools/call answer against CallToolResult, and the
    answer to a task-augmented call is a CreateTaskResult. The SDK's dispatcher sends it as is."""
    params = types.CallToolRequestParams(name=tool, arguments=arguments, task=types.TaskMetadata(ttl=TTL_MS))
    send = getattr(getattr(session, "_dispatcher", None), "send_raw_request", None)
    if send is None:
        raise TaskCallUnsupported(f"the mcp SDK's ClientSession has no _dispatcher.send_raw_request any more, so the "
                                  f"task-only tool {tool!r} cannot be called; use the SDK's public task call")
    raw = await send("tools/call", params.model_dump(by_alias=True, mode="json", exclude_none=True), {})
    return types.CreateTaskResult.model_validate(raw, by_name=False)


async def call_as_task(session: Any, tool: str, arguments: dict[str, Any], report: Report) -> types.CallToolResult:
    """Run ``tool`` as a task on the SDK ``session`` (a ``ClientSession``) and return its result."""
    task = (await send_task_call(session, tool, arguments)).task
    task_id = task.task_id
    try:
        steps = 0
        said = ""
        while True:
            if task.status_message and task.status_message != said:
                said = task.status_message
                steps += 1
                await report(float(steps), said)
            if task.status in TERMINAL or task.status == "input_required":
                break
            await anyio.sleep(poll_seconds(task))
            task = await session.send_request(
                types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)), types.GetTaskResult)
        result: types.CallToolResult = await session.send_request(
            types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
            types.CallToolResult)
        return result
    except BaseException:
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_BOUND_S), contextlib.suppress(Exception):
            answer = await session.send_request(
                types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id)), types.CancelTaskResult)
            log.info("mcp task %s (%s) cancelled: the server says %s", task_id, tool, answer.status)
        raise
