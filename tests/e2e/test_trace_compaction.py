"""A turn that compacts on the way shows its compaction rows in /trace and in the trace export."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from ai_coding.v1 import loop_pb2

from services.fake_model import FakeModelServer
from services.loop.tracing import store
from services.loop.tracing.export import render_export
from tests.e2e.test_loop_compaction import BIG_OUTPUT, INSTRUCTION, bash_step, long_stack, summary_step
from tests.service.loop.harness import LoopStack, fake, finished, status_name, workspace

__all__ = ["fake", "long_stack", "workspace"]


@pytest.mark.slow
def test_slash_trace_lists_every_compaction_layer_of_the_last_turn(long_stack: Callable[..., LoopStack],
                                                                    fake: FakeModelServer) -> None:
    stack = long_stack([summary_step(), bash_step(BIG_OUTPUT, repeat=8), {"text": "Refactor finished."}])
    sid, events = stack.turn(INSTRUCTION)
    assert status_name(finished(events)) == "completed"
    ended = [e.compaction_ended for e in events if e.WhichOneof("event") == "compaction_ended"]
    assert ended, "the script is meant to compact at least once"
    reply = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="trace"), timeout=10)
    ran = {layer.name for layer in ended[-1].layers}
    for name in ("L1", "L2", "L3", "L4"):
        assert (f"    {name}: removed" in reply.text) if name in ran else (f"    {name} not triggered" in reply.text)
    assert json.loads(reply.data_json)["turns"][0]["turn"] == 1
    page = render_export(store.sessions(stack.workspace)[0], "html")
    assert page.count("compaction ") >= len(ended)
