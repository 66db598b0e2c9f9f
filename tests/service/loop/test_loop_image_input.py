"""Image input: an image attachment reaches a model that takes images as an image part, and is
refused, with a sentence saying so, by one that does not. Text attachments become blocks."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from ai_coding.v1 import loop_pb2

from tests.service.loop.harness import (
    Conversation,
    LoopStack,
    fake,
    finished,
    make_stack,
    status_name,
    workspace,
)

__all__ = ["fake", "make_stack", "workspace"]

PNG = b"\x89PNG\r\n\x1a\n fake image bytes"


def start_with(stack: LoopStack, sid: str, text: str, *files: loop_pb2.InputAttachment) -> Conversation:
    return Conversation(stack.stub, loop_pb2.ClientMessage(start=loop_pb2.StartTurn(
        session_id=sid, input=text, attachments=list(files))))


def test_an_image_goes_to_a_model_that_takes_images_as_an_image_part(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    (workspace / "ai-coding.yaml").write_text("models:\n  fake:\n    images: true\n")
    stack = make_stack([{"text": "I see a fake image."}])
    sid = stack.open().session_id
    shot = loop_pb2.InputAttachment(path="shot.png", mime_type="image/png", data=PNG)
    end = finished(start_with(stack, sid, "what is in @shot.png?", shot).drain())
    assert status_name(end) == "completed", end.reason
    user = next(m for m in stack.fake.chat_requests[-1].body["messages"] if m["role"] == "user")
    assert user["content"][0] == {"type": "text", "text": "what is in @shot.png?"}
    assert user["content"][1] == {"type": "image_url", "image_url": {
        "url": "data:image/png;base64," + base64.b64encode(PNG).decode()}}


def test_an_image_sent_to_a_text_only_model_is_refused_with_a_sentence_and_nothing_runs(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"text": "should not be asked"}])
    sid = stack.open().session_id
    shot = loop_pb2.InputAttachment(path="shot.png", mime_type="image/png", data=PNG)
    with pytest.raises(grpc.RpcError) as err:
        start_with(stack, sid, "what is in @shot.png?", shot).drain()
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not accept images" in (err.value.details() or "")
    assert stack.fake.chat_requests == []


def test_a_text_attachment_follows_the_words_as_a_marked_block(make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack([{"text": "read it"}])
    sid = stack.open().session_id
    notes = loop_pb2.InputAttachment(path="notes.md", mime_type="text/plain", data=b"# Notes\n", truncated=True)
    end = finished(start_with(stack, sid, "summarise @notes.md", notes).drain())
    assert status_name(end) == "completed", end.reason
    user = next(m for m in stack.fake.chat_requests[-1].body["messages"] if m["role"] == "user")
    assert user["content"].startswith(
        'summarise @notes.md\n\n<attachment path="notes.md" truncated="true">\n# Notes\n')
