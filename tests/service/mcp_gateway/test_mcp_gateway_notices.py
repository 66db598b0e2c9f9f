"""What a server tells the gateway unasked, with our library server (tests/mcp_servers/library_server.py):
its instructions reach the catalog, ``tools/list_changed`` brings the new tool into it, and log
messages at or above the level the gateway asked for (``logging/setLevel info``) are kept."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ai_coding.v1 import mcp_gateway_pb2 as pb

LIBRARY = Path(__file__).resolve().parents[2] / "mcp_servers" / "library_server.py"


def library(name: str = "library") -> dict[str, Any]:
    return {"name": name, "type": "local", "command": [sys.executable, str(LIBRARY)]}


def test_a_servers_instructions_are_in_the_catalog(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([library()]) as gw:
            await gw.wait_state("library", pb.SERVER_STATE_CONNECTED)
            text = (await gw.stub.GetCatalog(pb.GetCatalogRequest(), timeout=10)).text
            assert "What the servers say about using them:\n- library: The library server knows three books" in text

    asyncio.run(scenario())


def test_a_tool_list_change_brings_the_new_tool_into_the_catalog(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([library()]) as gw:
            await gw.wait_state("library", pb.SERVER_STATE_CONNECTED)
            before = await gw.stub.GetCatalog(pb.GetCatalogRequest(), timeout=10)
            assert "library__read_dune" not in {e.qualified_name for e in before.entries}
            _, shelved = await gw.call("library", "shelve", '{"title": "dune"}')
            assert shelved.ok, shelved.error
            for _ in range(100):
                after = await gw.stub.GetCatalog(pb.GetCatalogRequest(), timeout=10)
                if "library__read_dune" in {e.qualified_name for e in after.entries}:
                    break
                await asyncio.sleep(0.1)
            assert "library__read_dune" in after.text
            assert (await gw.servers())["library"].attempts == 1  # listed again, not reconnected
            _, read = await gw.call("library", "read_dune")
            assert read.ok and read.output.startswith("reading dune: Dune")

    asyncio.run(scenario())


def test_log_messages_at_the_asked_level_and_above_are_kept(
        gateway: Callable[..., Any], caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        async with gateway([library()]) as gw:
            await gw.wait_state("library", pb.SERVER_STATE_CONNECTED)
            with caplog.at_level(logging.DEBUG, logger="ai_coding.mcp_gateway.server_log"):
                _, result = await gw.call("library", "log_something", '{"text": "hello"}')
                assert result.ok and result.output == "logged at info and above"  # setLevel info arrived
                await asyncio.sleep(0.3)
            said = [r.getMessage() for r in caplog.records if r.name == "ai_coding.mcp_gateway.server_log"]
            kept = [m for m in said if "hello" in m]
            assert kept == ["mcp server library/library [info] info: hello",
                            "mcp server library/library [warning] warning: hello",
                            "mcp server library/library [error] error: hello"], said

    asyncio.run(scenario())


def test_list_servers_carries_the_newest_kept_log_lines_only_when_asked(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([library()]) as gw:
            await gw.wait_state("library", pb.SERVER_STATE_CONNECTED)
            _, result = await gw.call("library", "log_something", '{"text": "shelf"}')
            assert result.ok, result.error
            for _ in range(50):
                asked = await gw.stub.ListServers(pb.ListServersRequest(log_lines=2), timeout=10)
                if len(asked.servers[0].log) == 2:
                    break
                await asyncio.sleep(0.1)
            assert [(line.level, line.logger, line.text) for line in asked.servers[0].log] == [
                ("warning", "library", "warning: shelf"), ("error", "library", "error: shelf")]
            assert not (await gw.servers())["library"].log  # not asked: not sent

    asyncio.run(scenario())


def test_a_local_server_that_dies_at_start_shows_its_stderr_among_its_log_lines(gateway: Callable[..., Any]) -> None:
    dying = {"name": "dying", "type": "local",
             "command": [sys.executable, "-c", "import sys; print('config file missing: /etc/dying.toml', "
                                               "file=sys.stderr); sys.exit(3)"]}

    async def scenario() -> None:
        async with gateway([dying]) as gw:
            await gw.wait_state("dying", pb.SERVER_STATE_FAILED)
            asked = await gw.stub.ListServers(pb.ListServersRequest(log_lines=10), timeout=10)
            lines = [(line.level, line.text) for line in asked.servers[0].log]
            assert ("stderr", "config file missing: /etc/dying.toml") in lines, lines

    asyncio.run(scenario())
