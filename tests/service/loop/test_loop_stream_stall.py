"""A model stream that goes silent (mid-reply, or before its first chunk) is abandoned after the
idle timeout and the step retried, with a notice saying so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.fake_model import FakeModelServer
from tests.service.loop.harness import LoopStack, finished, model_config, status_name


def _turn_with_idle_timeout(short_dir: Path, workspace: Path, fake: FakeModelServer,
                            steps: list[dict[str, Any]]) -> list[Any]:
    """One turn against ``steps`` with ``stream_idle_seconds: 1``; its events."""
    fake.load_script(steps)
    config = model_config(fake.url)
    config["models"]["fake"]["stream_idle_seconds"] = 1.0
    stack = LoopStack(short_dir, workspace, fake, config, with_tools=False)
    try:
        _, events = stack.turn("answer me")
    finally:
        stack.close()
    return list(events)


def test_a_stream_that_stalls_mid_reply_is_retried_after_the_idle_timeout(
        short_dir: Path, workspace: Path, fake: FakeModelServer, isolated_home: Path) -> None:
    events = _turn_with_idle_timeout(short_dir, workspace, fake, [
        # Two chunks, then silence far longer than the idle timeout (then it would finish "normally").
        {"text": "half an answer that never ends", "chunk_chars": 5,
         "fault": {"kind": "stall", "after_chunks": 2, "seconds": 45}},
        {"text": "the whole answer"},
    ])
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "the whole answer"
    notices = [e.notice.text for e in events if e.WhichOneof("event") == "notice"]
    assert any("stream broke off; retrying the step" in n for n in notices), notices
    assert len(fake.requests) == 2


def test_a_stream_that_stalls_before_its_first_chunk_is_retried_and_says_so(
        short_dir: Path, workspace: Path, fake: FakeModelServer, isolated_home: Path) -> None:
    events = _turn_with_idle_timeout(short_dir, workspace, fake, [
        # The reply's headers, then silence before any chunk: nothing was shown, and the retry must say so.
        {"text": "never sent", "fault": {"kind": "stall", "after_chunks": 0, "seconds": 45}},
        {"text": "the answer after the retry"},
    ])
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "the answer after the retry"
    notices = [e.notice for e in events if e.WhichOneof("event") == "notice"]
    stalls = [n for n in notices if "failed before its first words" in n.text]
    assert len(stalls) == 1, [n.text for n in notices]
    assert "the stream sent nothing for 1 s (models.fake.stream_idle_seconds); retrying in" in stalls[0].text
    assert "(attempt 2)" in stalls[0].text and stalls[0].level == "warning"
    said = next(n for n, e in enumerate(events) if e.WhichOneof("event") == "notice" and e.notice == stalls[0])
    streamed = next(n for n, e in enumerate(events) if e.WhichOneof("event") == "text_delta")
    assert said < streamed  # said before the retry's answer streams
    assert len(fake.requests) == 2
