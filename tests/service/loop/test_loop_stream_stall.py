"""A model stream that goes silent mid-reply is abandoned after the idle timeout and the step retried."""

from __future__ import annotations

from pathlib import Path

from services.fake_model import FakeModelServer
from tests.service.loop.harness import LoopStack, finished, model_config, status_name


def test_a_stream_that_stalls_mid_reply_is_retried_after_the_idle_timeout(
        short_dir: Path, workspace: Path, fake: FakeModelServer, isolated_home: Path) -> None:
    fake.load_script([
        # Two chunks, then silence far longer than the idle timeout (then it would finish "normally").
        {"text": "half an answer that never ends", "chunk_chars": 5,
         "fault": {"kind": "stall", "after_chunks": 2, "seconds": 45}},
        {"text": "the whole answer"},
    ])
    config = model_config(fake.url)
    config["models"]["fake"]["stream_idle_seconds"] = 1.0
    stack = LoopStack(short_dir, workspace, fake, config, with_tools=False)
    try:
        _, events = stack.turn("answer me")
    finally:
        stack.close()
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "the whole answer"
    notices = [e.notice.text for e in events if e.WhichOneof("event") == "notice"]
    assert any("stream broke off; retrying the step" in n for n in notices), notices
    assert len(fake.requests) == 2
