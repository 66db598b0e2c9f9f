"""The task-augmented tools/call leans on one private part of the mcp SDK (``tasks.send_task_call``):
these fail loudly when the SDK changes it, or when it gains a public call to move to. The call itself
runs against server-everything in ``tests/service/mcp_gateway/test_mcp_gateway_servers.py``."""

from __future__ import annotations

import inspect

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import Outbound

from services.mcp_gateway.tasks import TaskCallUnsupported, send_task_call


def _session() -> ClientSession:
    send, receive = anyio.create_memory_object_stream[object](1)
    return ClientSession(receive, send)  # type: ignore[arg-type]  # never entered: only its parts are read


def test_the_sdk_session_still_has_the_private_dispatcher_with_the_raw_send_the_adapter_calls() -> None:
    dispatcher = getattr(_session(), "_dispatcher", None)
    assert dispatcher is not None, "mcp's ClientSession has no _dispatcher: rewrite tasks.send_task_call"
    assert isinstance(dispatcher, Outbound), "the dispatcher is no longer the SDK's Outbound: check send_raw_request"
    parameters = list(inspect.signature(dispatcher.send_raw_request).parameters)
    assert parameters[:3] == ["method", "params", "opts"], f"send_raw_request now takes {parameters}"


def test_the_sdk_has_no_public_task_call_yet() -> None:
    """When this fails, the SDK can send a task-augmented call itself: move send_task_call to it."""
    assert "task" not in inspect.signature(ClientSession.call_tool).parameters
    assert not hasattr(ClientSession, "call_tool_as_task") and not hasattr(ClientSession, "experimental")
    assert "task" in types.CallToolRequestParams.model_fields, "the wire params lost `task`: tasks changed shape"


def test_a_session_without_the_private_dispatcher_is_refused_by_name_not_with_an_attribute_error() -> None:
    class Bare:
        pass

    with pytest.raises(TaskCallUnsupported, match="task-only tool 'slow'"):
        anyio.run(send_task_call, Bare(), "slow", {})
