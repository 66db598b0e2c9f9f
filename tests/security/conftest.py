"""Fixtures for the security tests: a real tool service (in a thread, or as its own process)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from services.kernel.config import Config
from services.tools.harness import ThreadedToolService


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def make_service(short_dir: Path) -> Iterator[Callable[..., ThreadedToolService]]:
    started: list[ThreadedToolService] = []

    def make(tools: dict[str, Any] | None = None) -> ThreadedToolService:
        config = Config(data={"tools": tools or {}})
        service = ThreadedToolService(config, str(short_dir / f"s{len(started)}.sock")).start()
        started.append(service)
        return service

    yield make
    for service in started:
        service.stop()


@pytest.fixture
def service(make_service: Callable[..., ThreadedToolService], workspace: Path) -> ThreadedToolService:
    svc = make_service()
    svc.open("s1", str(workspace))
    return svc
