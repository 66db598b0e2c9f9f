"""Issue 28 item 5: llama.cpp's and Gemini's context-overflow wordings trigger compaction, and the
window the server states in its refusal is the budget from the retry on (one refusal per turn)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from services.fake_model import FakeModelServer
from services.loop.compaction.summary import SUMMARY_MARKER
from tests.service.loop.harness import LoopStack, fake, finished, model_config, status_name, workspace

__all__ = ["fake", "workspace"]

WINDOW = 32_000
BIG_OUTPUT = "head -c 15000 /dev/urandom | base64 -w 100"  # ~20 KB of distinct output per call


@pytest.fixture
def overflow_stack(short_dir: Path, workspace: Path, fake: FakeModelServer, isolated_home: Path
                   ) -> Iterator[Callable[..., LoopStack]]:
    stacks: list[LoopStack] = []

    def make(style: str) -> LoopStack:
        fake.load_script({"order": "first_match", "context_window": WINDOW, "window_style": style, "steps": [
            {"match": SUMMARY_MARKER, "repeat": "forever", "text": "Goal: run the command. Done: ran it often."},
            {"tool_calls": [{"name": "bash", "arguments": {"command": BIG_OUTPUT}}], "repeat": 8},
            {"text": "survived"}]})
        config = model_config(fake.url, max_tool_iterations=100, duplicate_call_threshold=0,
                              turn_timeout_seconds=600)
        # The entry claims twice the window the server holds: only the server's refusal can tell.
        config["models"]["fake"].update(context_window=2 * WINDOW, max_tokens=4000, max_retries=0)
        config["compaction"] = {"keep_recent_tool_tokens": 10**9}  # outputs stay verbatim up to the ceiling
        stack = LoopStack(short_dir, workspace, fake, config, with_tools=True)
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("style", ["llamacpp", "gemini"])
def test_an_overflow_in_a_servers_own_wording_compacts_and_the_stated_window_holds_from_then_on(
        overflow_stack: Callable[..., LoopStack], fake: FakeModelServer, style: str) -> None:
    stack = overflow_stack(style)
    _, events = stack.turn("Run the command eight times.")
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    assert end.text == "survived"
    notices = [e.notice.text for e in events if e.WhichOneof("event") == "notice"]
    assert any("compacting harder" in n for n in notices)
    # One refusal: after it, compaction's ceiling follows the stated window and no request exceeds it.
    assert len(fake.over_window) == 1, fake.over_window
    windows = [e.context_assembled.window_tokens for e in events if e.WhichOneof("event") == "context_assembled"]
    assert windows[0] == 2 * WINDOW and windows[-1] == WINDOW
    assert fake.errors == []


