"""The gateway against real MCP servers: discovery, calls, progress, failures."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from ai_coding.v1 import mcp_gateway_pb2 as pb

from .conftest import DEMO, demo_server, everything_server

CONNECTED = pb.SERVER_STATE_CONNECTED
FAILED = pb.SERVER_STATE_FAILED


def test_the_official_everything_server_is_discovered_and_get_sum_adds(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([everything_server()]) as gw:
            status = await gw.wait_state("everything", CONNECTED)
            assert status.tool_count >= 10
            catalog = await gw.stub.GetCatalog(pb.GetCatalogRequest(), timeout=10)
            names = {e.qualified_name for e in catalog.entries}
            assert "everything__get-sum" in names
            assert "- everything__get-sum: " in catalog.text  # 15 tools: the short tier
            # What the server's initialize said about using it reaches the model, cut to its limit.
            notes = catalog.text.split("What the servers say about using them:\n", 1)[1]
            assert notes.startswith("- everything: # Everything Server – Server Instructions")
            levels = {e.tool: e.permission for e in catalog.entries}
            assert levels["echo"] == "allow" and levels["get-sum"] == "allow"  # readOnlyHint, trusted by default
            assert levels["gzip-file-as-resource"] == "warn"  # it writes: the user is asked
            _, result = await gw.call("everything", "get-sum", json.dumps({"a": 1234, "b": 5678}))
            assert result.ok, result.error
            assert "6912" in result.output
            assert result.tool == "everything__get-sum"

    asyncio.run(scenario())


def test_a_tool_that_runs_only_as_an_mcp_task_runs_to_its_result_with_its_stages_as_progress(
        gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([everything_server()]) as gw:
            await gw.wait_state("everything", CONNECTED)
            catalog = await gw.stub.GetCatalog(pb.GetCatalogRequest(), timeout=10)
            assert "everything__simulate-research-query" in {e.qualified_name for e in catalog.entries}
            chunks, result = await gw.call("everything", "simulate-research-query", '{"topic": "tides"}')
            assert result.ok, result.error
            assert "# Research Report: tides" in result.output
            # Each status the polls saw, once and in order (a loaded machine may poll past a stage).
            stages = ["Gathering sources...", "Analyzing content...", "Synthesizing findings...",
                      "Generating report..."]
            seen = [stages.index(c.text) for c in chunks]
            assert seen and seen == sorted(set(seen)), [c.text for c in chunks]
            assert [c.progress for c in chunks] == list(range(1, len(chunks) + 1))

    asyncio.run(scenario())


def test_a_task_whose_call_gives_up_is_cancelled_on_the_server(
        gateway: Callable[..., Any], caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        async with gateway([everything_server()]) as gw:
            await gw.wait_state("everything", CONNECTED)
            with caplog.at_level(logging.INFO, logger="ai_coding.mcp_gateway.tasks"):
                _, result = await gw.call("everything", "simulate-research-query", '{"topic": "tides"}', timeout=1.5)
            assert not result.ok and result.error.code == "tool_timeout"
            said = [r.getMessage() for r in caplog.records if r.name == "ai_coding.mcp_gateway.tasks"]
            assert any("(simulate-research-query) cancelled: the server says cancelled" in m for m in said), said

    asyncio.run(scenario())


def test_progress_notifications_arrive_as_progress_chunks_before_the_result(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([everything_server(), demo_server("demo")]) as gw:
            await gw.wait_state("demo", CONNECTED)
            chunks, result = await gw.call("demo", "count_with_progress", '{"steps": 4}', call_id="p1")
            assert result.ok and "counted to 4" in result.output
            assert [c.progress for c in chunks] == [1, 2, 3, 4]
            assert {c.stream for c in chunks} == {"progress"} and {c.call_id for c in chunks} == {"p1"}
            assert chunks[0].total == 4 and chunks[0].text == "step 1 of 4"
            await gw.wait_state("everything", CONNECTED)
            chunks, result = await gw.call("everything", "trigger-long-running-operation",
                                           '{"duration": 1, "steps": 3}')
            assert result.ok, result.error
            assert [c.progress for c in chunks] == [1, 2, 3]

    asyncio.run(scenario())


def test_a_server_that_crashes_mid_call_reconnects_and_the_next_call_works(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([demo_server("demo")]) as gw:
            await gw.wait_state("demo", CONNECTED)
            _, before = await gw.call("demo", "whoami")
            _, crashed = await gw.call("demo", "crash")
            assert not crashed.ok and crashed.error.code == "mcp_transport_failed"
            _, after = await gw.call("demo", "whoami")
            assert after.ok, after.error
            assert after.output.split()[0] != before.output.split()[0]  # a new process (new pid)
            status = (await gw.servers())["demo"]
            assert status.state == CONNECTED and status.attempts == 2

    asyncio.run(scenario())


def test_an_ordinary_tool_error_does_not_restart_the_server(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([demo_server("demo")]) as gw:
            await gw.wait_state("demo", CONNECTED)
            _, failed = await gw.call("demo", "fail", '{"message": "bad input"}')
            assert not failed.ok and failed.error.code == "mcp_tool_error" and "bad input" in failed.output
            _, ok = await gw.call("demo", "add", '{"a": 2, "b": 3}')
            assert ok.ok and "is 5" in ok.output
            assert (await gw.servers())["demo"].attempts == 1

    asyncio.run(scenario())


def test_a_call_that_never_answers_times_out_and_other_servers_are_unaffected(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        servers = [demo_server("slow", timeout={"execution": 1500}), demo_server("fast")]
        async with gateway(servers) as gw:
            await gw.wait_state("slow", CONNECTED)
            await gw.wait_state("fast", CONNECTED)
            hung = asyncio.ensure_future(gw.call("slow", "hang"))
            await asyncio.sleep(0.2)
            started = time.monotonic()
            _, fast = await gw.call("fast", "echo", '{"text": "still here"}')
            assert fast.ok and "still here" in fast.output
            assert not hung.done(), "the hung call should still be waiting while the other server answers"
            assert time.monotonic() - started < 1.0
            _, result = await hung
            assert not result.ok and result.error.code == "tool_timeout" and result.limit_hit == "timeout"

    asyncio.run(scenario())


def test_a_server_that_never_answers_the_handshake_fails_at_its_startup_timeout(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        servers = [demo_server("mute", "mute", timeout={"startup": 1000}), demo_server("fine")]
        async with gateway(servers) as gw:
            first = await gw.servers()  # start did not wait for anyone
            assert first["mute"].state == pb.SERVER_STATE_CONNECTING
            status = await gw.wait_state("mute", FAILED, timeout=30)
            assert "within 1s" in status.reason
            assert status.degraded and "mute" in status.degraded_reason
            await gw.wait_state("fine", CONNECTED)
            _, ok = await gw.call("fine", "echo", '{"text": "hi"}')
            assert ok.ok

    asyncio.run(scenario())


def test_a_command_that_does_not_exist_is_degraded_and_the_others_work(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        servers = [{"name": "ghost", "type": "local", "command": ["no-such-mcp-server-xyz"]}, demo_server("demo")]
        async with gateway(servers) as gw:
            ghost = await gw.wait_state("ghost", FAILED)
            assert "command not found" in ghost.reason and "no-such-mcp-server-xyz" in ghost.reason
            assert ghost.degraded and ghost.next_retry_in_s > 0
            await gw.wait_state("demo", CONNECTED)
            catalog = await gw.stub.GetCatalog(pb.GetCatalogRequest(), timeout=10)
            assert {s.name: s.degraded for s in catalog.servers} == {"ghost": True, "demo": False}
            assert all(e.server == "demo" for e in catalog.entries)
            _, result = await gw.call("ghost", "anything")
            assert not result.ok and result.error.code == "mcp_server_unavailable"
            _, ok = await gw.call("demo", "add", '{"a": 1234, "b": 5678}')
            assert ok.ok and "6912" in ok.output

    asyncio.run(scenario())


def test_a_remote_streamable_http_server_gets_its_headers_and_streams_progress(
        gateway: Callable[..., Any], http_demo: str) -> None:
    async def scenario() -> None:
        remote = {"name": "web", "type": "remote", "url": http_demo, "headers": {"X-Team-Token": "t-42"}}
        async with gateway([remote]) as gw:
            status = await gw.wait_state("web", CONNECTED)
            assert status.type == "remote" and status.tool_count >= 7
            _, result = await gw.call("web", "header", '{"name": "X-Team-Token"}')
            assert result.ok and result.output == "X-Team-Token=t-42"
            chunks, counted = await gw.call("web", "web__count_with_progress", '{"steps": 3}')
            assert counted.ok and [c.progress for c in chunks] == [1, 2, 3]

    asyncio.run(scenario())


def test_the_tools_whitelist_hides_and_refuses_other_tools(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([demo_server("demo", tools=["echo", "add"])]) as gw:
            status = await gw.wait_state("demo", CONNECTED)
            assert status.tool_count == 2
            catalog = await gw.stub.GetCatalog(pb.GetCatalogRequest(), timeout=10)
            assert sorted(e.tool for e in catalog.entries) == ["add", "echo"]
            _, refused = await gw.call("demo", "whoami")
            assert not refused.ok and refused.error.code == "mcp_tool_not_available"

    asyncio.run(scenario())


def test_bad_call_input_and_unknown_servers_come_back_as_readable_tool_errors(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([demo_server("demo")]) as gw:
            await gw.wait_state("demo", CONNECTED)
            _, not_json = await gw.call("demo", "echo", "{text: ")
            assert not not_json.ok and not_json.error.code == "invalid_arguments" and "JSON" in not_json.output
            _, listy = await gw.call("demo", "echo", "[1]")
            assert not listy.ok and "JSON object" in listy.output
            _, unknown = await gw.call("nope", "echo", "{}")
            assert not unknown.ok and unknown.error.code == "mcp_unknown_server" and "demo" in unknown.error.hint
            _, missing_arg = await gw.call("demo", "add", '{"a": 1}')
            assert not missing_arg.ok and missing_arg.error.code == "mcp_tool_error"
            assert (await gw.servers())["demo"].attempts == 1

    asyncio.run(scenario())


def test_environment_keys_reach_a_local_server_with_their_case(gateway: Callable[..., Any], tmp_path: Any) -> None:
    async def scenario() -> None:
        server = demo_server("demo", environment={"DEMO_Mixed": "1", "demo_lower": "2"}, cwd=str(tmp_path))
        async with gateway([server]) as gw:
            await gw.wait_state("demo", CONNECTED)
            _, result = await gw.call("demo", "whoami")
            assert "('DEMO_Mixed', '1')" in result.output and "('demo_lower', '2')" in result.output
            assert f"cwd={tmp_path}" in result.output

    asyncio.run(scenario())


def test_no_more_than_four_servers_connect_at_once(gateway: Callable[..., Any], tmp_path: Any) -> None:
    starts = tmp_path / "starts.txt"

    async def scenario() -> None:
        servers = [{"name": f"s{i}", "command": [sys.executable, str(DEMO), "slowstart", str(starts)]}
                   for i in range(6)]
        async with gateway(servers) as gw:
            for i in range(6):
                await gw.wait_state(f"s{i}", CONNECTED)
        times = sorted(float(t) for t in starts.read_text().split())
        assert len(times) == 6
        # Each server takes >= 1 s to become ready, so a fifth spawn had to wait for a slot.
        assert times[4] - times[0] >= 0.9, times

    asyncio.run(scenario())


def test_env_references_expand_at_connect_and_a_missing_one_fails_only_that_server(
        gateway: Callable[..., Any], monkeypatch: Any, tmp_path: Any) -> None:
    monkeypatch.setenv("DEMO_SECRET_SOURCE", "s3cret")
    servers = [demo_server("good", environment={"DEMO_TOKEN": "${DEMO_SECRET_SOURCE}"}),
               demo_server("unset", environment={"DEMO_TOKEN": "${DEMO_NOT_SET_ANYWHERE}"}),
               demo_server("nowhere", cwd=str(tmp_path / "missing"))]

    async def scenario() -> None:
        async with gateway(servers) as gw:
            await gw.wait_state("good", CONNECTED)
            _, result = await gw.call("good", "whoami")
            assert "('DEMO_TOKEN', 's3cret')" in result.output
            unset = await gw.wait_state("unset", FAILED)
            assert "DEMO_NOT_SET_ANYWHERE is not set" in unset.reason
            nowhere = await gw.wait_state("nowhere", FAILED)
            assert "does not exist" in nowhere.reason

    asyncio.run(scenario())


def test_a_server_killed_while_idle_is_noticed_at_the_next_call_and_replaced(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([demo_server("demo")]) as gw:
            await gw.wait_state("demo", CONNECTED)
            _, who = await gw.call("demo", "whoami")
            pid = int(who.output.split()[0].removeprefix("pid="))
            os.kill(pid, signal.SIGKILL)
            _, broken = await gw.call("demo", "echo", '{"text": "a"}')
            assert not broken.ok and broken.error.code == "mcp_transport_failed"
            _, fixed = await gw.call("demo", "echo", '{"text": "b"}')
            assert fixed.ok and fixed.output == "echo: b"

    asyncio.run(scenario())


def test_a_server_that_dies_at_startup_is_failed_with_its_last_stderr_line(gateway: Callable[..., Any]) -> None:
    dying = {"name": "dying", "command": [sys.executable, "-c",
                                          "import sys; print('loading', file=sys.stderr); "
                                          "sys.exit('FATAL: DEMO_API_KEY is not set')"]}

    async def scenario() -> None:
        async with gateway([dying, demo_server("demo")]) as gw:
            status = await gw.wait_state("dying", FAILED)
            assert "FATAL: DEMO_API_KEY is not set" in status.reason
            await gw.wait_state("demo", CONNECTED)

    asyncio.run(scenario())


def test_a_disabled_server_is_listed_but_never_started(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([demo_server("off", disabled=True)]) as gw:
            status = (await gw.servers())["off"]
            assert status.state == pb.SERVER_STATE_DISABLED and status.attempts == 0
            _, result = await gw.call("off", "echo", '{"text": "x"}')
            assert not result.ok and "disabled" in result.error.hint

    asyncio.run(scenario())


def test_the_gateway_introduces_itself_by_its_own_name_and_version(gateway: Callable[..., Any]) -> None:
    from services.kernel import __version__

    async def scenario() -> None:
        async with gateway([demo_server("demo")]) as gw:
            await gw.wait_state("demo", CONNECTED)
            _, result = await gw.call("demo", "client")
            assert result.ok, result.error
            assert result.output == f"ai-coding {__version__}"

    asyncio.run(scenario())


def test_a_legacy_sse_server_written_as_type_sse_connects_and_answers(gateway: Callable[..., Any]) -> None:
    from .conftest import EVERYTHING, free_port, wait_port

    port = free_port()
    proc = subprocess.Popen(["node", str(EVERYTHING), "sse"], env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    async def scenario() -> None:
        # Claude Code's shape: type sse + url; read as a remote server over the legacy transport.
        async with gateway([{"name": "legacy", "type": "sse", "url": f"http://127.0.0.1:{port}/sse"}]) as gw:
            status = await gw.wait_state("legacy", CONNECTED)
            assert status.tool_count >= 10
            _, result = await gw.call("legacy", "get-sum", json.dumps({"a": 20, "b": 22}))
            assert result.ok, result.error
            assert "42" in result.output

    try:
        wait_port(port, proc)
        asyncio.run(scenario())
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_resource_is_listed_and_read_and_a_prompt_is_filled_from_the_official_everything_server(
        gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([everything_server()]) as gw:
            await gw.wait_state("everything", CONNECTED)
            listed = (await gw.stub.ListResources(pb.ListResourcesRequest(server="everything"), timeout=60)).result
            assert listed.ok, listed.error
            uris = [r["uri"] for r in json.loads(listed.data_json)["resources"]]
            doc = next(u for u in uris if u.endswith("/features.md"))
            assert doc in listed.output
            read = (await gw.stub.ReadResource(pb.ReadResourceRequest(server="everything", uri=doc), timeout=60)).result
            assert read.ok, read.error
            assert "#" in read.output and len(read.output) > 100  # the markdown document itself
            prompts = (await gw.stub.ListPrompts(pb.ListPromptsRequest(server="everything"), timeout=60)).result
            assert prompts.ok and "args-prompt(city*, state)" in prompts.output, prompts.output
            filled = (await gw.stub.GetPrompt(pb.GetPromptRequest(
                server="everything", name="args-prompt", arguments_json='{"city": "Lisbon"}'), timeout=60)).result
            assert filled.ok, filled.error
            assert filled.output == "user: What's weather in Lisbon?"
            missing = (await gw.stub.ReadResource(pb.ReadResourceRequest(
                server="everything", uri="demo://no/such/thing"), timeout=60)).result
            assert not missing.ok and missing.error.code == "mcp_error"
            unknown = (await gw.stub.ListPrompts(pb.ListPromptsRequest(server="nope"), timeout=60)).result
            assert not unknown.ok and unknown.error.code == "mcp_unknown_server"

    asyncio.run(scenario())


def test_read_only_hints_are_ignored_for_a_server_whose_hints_are_not_trusted(gateway: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with gateway([everything_server(trust_read_only_hint=False)]) as gw:
            await gw.wait_state("everything", CONNECTED)
            catalog = await gw.stub.GetCatalog(pb.GetCatalogRequest(), timeout=10)
            assert {e.permission for e in catalog.entries} == {"warn"}

    asyncio.run(scenario())
