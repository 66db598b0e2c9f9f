"""A fake model (a real HTTP server) answering summary requests, and the ModelClient that talks to it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from services.fake_model import FakeModelServer
from services.loop.model.client import OpenAIModelClient
from services.loop.model.settings import ModelSettings


@pytest.fixture
def runner() -> Iterator[asyncio.Runner]:
    """One event loop for the whole test (a model client's connections belong to the loop that opened them)."""
    with asyncio.Runner() as r:
        yield r


@pytest.fixture
def summary_model() -> Iterator[Callable[..., tuple[FakeModelServer, OpenAIModelClient]]]:
    started: list[FakeModelServer] = []

    def start(script: Any) -> tuple[FakeModelServer, OpenAIModelClient]:
        server = FakeModelServer(script).start()
        started.append(server)
        client = OpenAIModelClient(ModelSettings(name="fake", provider="generic", model="fake-model",
                                                 base_url=server.url, api_key="k", max_retries=0))
        return server, client

    yield start
    for server in started:
        server.stop()
