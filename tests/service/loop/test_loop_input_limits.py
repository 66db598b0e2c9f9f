"""The loop's input limits (README "Limits"): refused at the edge with a sentence that says what to do."""

from __future__ import annotations

import os
from collections.abc import Callable

import grpc
import pytest

from services.loop.core.limits import PROMPT_MAX_BYTES, SESSION_MAX_BYTES
from tests.service.loop.harness import LoopStack, finished, status_name


def test_a_prompt_over_one_mib_is_refused_and_one_at_the_limit_runs(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"text": "read it", "repeat": "forever"}])
    sid = stack.open().session_id
    with pytest.raises(grpc.RpcError) as err:
        stack.start(sid, "p" * (PROMPT_MAX_BYTES + 1)).drain()
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details() == (f"the prompt is {PROMPT_MAX_BYTES + 1:,} bytes; a prompt may be at most "
                                   f"{PROMPT_MAX_BYTES:,} bytes (1 MiB) Put the material in a file in the workspace "
                                   "and ask the agent to read it.")
    assert stack.fake.requests == []  # refused before the model was asked
    assert status_name(finished(stack.start(sid, "p" * PROMPT_MAX_BYTES).drain())) == "completed"


def test_a_session_past_its_size_limit_takes_no_new_turn(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"text": "ok", "repeat": "forever"}])
    sid, _ = stack.turn("first")
    journal = stack.workspace / ".ai-coding" / "sessions" / f"{sid}.journal"
    os.truncate(journal, SESSION_MAX_BYTES + 1)  # sparse: as big as a very long session, for free
    with pytest.raises(grpc.RpcError) as err:
        stack.start(sid, "one more").drain()
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = err.value.details() or ""
    assert details.startswith(f"session {sid} holds 64.0 MiB on disk; a session may hold at most 64.0 MiB")
    assert "Start a new session (leave out --session)" in details
