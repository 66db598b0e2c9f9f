"""Fixtures for the fake model's service tests: a real server on a real TCP port, stopped after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from services.fake_model import FakeModelServer


@pytest.fixture
def fake_model() -> Iterator[Callable[..., FakeModelServer]]:
    """Start a ``FakeModelServer`` for a script; every server started here is stopped at teardown."""
    started: list[FakeModelServer] = []

    def start(script: Any, **kwargs: Any) -> FakeModelServer:
        server = FakeModelServer(script, **kwargs).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
