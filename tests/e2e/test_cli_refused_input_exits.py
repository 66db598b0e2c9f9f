"""A turn the loop refuses for the caller's input exits 2 (bad input), with the loop's sentence and
no model call: an image for a model without `images: true`."""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_stack import Stack, cli, cli_stack

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with cli_stack("aic-refused-", [{"text": "should not be asked", "repeat": "forever"}]) as running:
        yield running


def test_an_image_for_a_text_only_model_exits_2_and_asks_no_model(stack: Stack) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    (workspace / "shot.png").write_bytes(PNG)
    before = len(stack.model.chat_requests)
    done = cli(stack.env, "run", "-w", str(workspace), "what is in @shot.png?")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "does not accept images" in done.stderr and "images: true" in done.stderr
    assert len(stack.model.chat_requests) == before


def test_a_session_whose_only_input_was_refused_is_not_listed(stack: Stack) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="ws-", dir=stack.base))
    (workspace / "shot.png").write_bytes(PNG)
    assert cli(stack.env, "run", "-w", str(workspace), "what is in @shot.png?").returncode == 2
    listed = cli(stack.env, "sessions", "list", "-w", str(workspace))
    assert listed.returncode == 0, listed.stderr
    assert "(empty)" not in listed.stdout and "@shot.png" not in listed.stdout
    kept = cli(stack.env, "run", "-w", str(workspace), "hello")
    assert kept.returncode == 0
    assert "hello" in cli(stack.env, "sessions", "list", "-w", str(workspace)).stdout
