"""A real tool service on a Unix socket (served from a background thread) and a workspace.

Used by tests/service/tools and tests/security: import the fixtures into a conftest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from services.kernel.config import Config
from tests.support.tools_harness import ThreadedToolService


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def make_service(isolated_home: Path, short_dir: Path) -> Iterator[Callable[..., ThreadedToolService]]:
    """Start tool services with a given ``tools`` config section; all stopped at teardown (in a
    throwaway home: the checkpoint store lives in the data dir)."""
    started: list[ThreadedToolService] = []

    def make(tools: dict[str, Any] | None = None) -> ThreadedToolService:
        config = Config(data={"tools": tools or {}})
        service = ThreadedToolService(config, str(short_dir / f"t{len(started)}.sock")).start()
        started.append(service)
        return service

    yield make
    for service in started:
        service.stop()


@pytest.fixture
def service(make_service: Callable[..., ThreadedToolService], workspace: Path) -> ThreadedToolService:
    """One tool service with session ``s1`` open on ``workspace``."""
    svc = make_service()
    svc.open("s1", str(workspace))
    return svc
