"""Every degradation reaches the user who started the work, once, in the stream they watch (real
loop service; the fake model is the only stand-in)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.service.loop.harness import LoopStack, fake, make_stack, workspace

__all__ = ["fake", "make_stack", "workspace"]


def test_a_1_mb_agents_md_is_cut_and_opening_the_session_says_so_once(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("# Rules\n" + "Keep every line short. " * 45_000)
    stack = make_stack([{"match": "hello", "text": "hi", "repeat": "forever"}])
    opened = stack.open()
    cut = [w for w in opened.warnings if "project instructions" in w]
    assert len(cut) == 1, opened.warnings
    assert "only the first 16,000 reach the model" in cut[0] and "AGENTS.md" in cut[0], cut[0]
    again = stack.open(opened.session_id)
    assert len([w for w in again.warnings if "project instructions" in w]) <= 1
