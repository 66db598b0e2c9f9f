"""Fixtures for the loop service tests (the harness is in harness.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from services.fake_model import FakeModelServer
from tests.service.loop.harness import LoopStack, model_config


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    with FakeModelServer([]) as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def make_stack(short_dir: Path, workspace: Path, fake: FakeModelServer, isolated_home: Path
               ) -> Iterator[Callable[..., LoopStack]]:
    stacks: list[LoopStack] = []

    def make(script: list[dict[str, Any]] | None = None, *, with_tools: bool = False, **ai: Any) -> LoopStack:
        if script is not None:
            fake.load_script(script)
        stack = LoopStack(short_dir, workspace, fake, model_config(fake.url, **ai), with_tools)
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.close()
