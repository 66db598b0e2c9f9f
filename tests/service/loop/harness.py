"""Harness: a real loop service (and, when asked, a real tools service) on unix sockets, with the fake model.

The services run on an asyncio loop in a background thread; tests talk to them
with blocking gRPC clients, as the CLI does. Nothing is patched: the only
stand-in is the fake model, a real HTTP server.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import grpc
import pytest
from ai_coding.v1 import loop_pb2, loop_pb2_grpc

from services.fake_model import FakeModelServer
from services.kernel.config import Config
from services.kernel.server import RunningServer, ServiceDef, create_server, shutdown

EVENT_TIMEOUT_S = 60.0


class ServiceThread:
    """An asyncio loop in a thread that hosts real gRPC servers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.running: list[RunningServer] = []

    def run(self, coro: Any, timeout: float = 30.0) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def serve(self, address: str, service: ServiceDef) -> RunningServer:
        running: RunningServer = self.run(create_server(address, service))
        self.running.append(running)
        return running

    def stop_server(self, running: RunningServer, grace: float = 1.0) -> None:
        self.run(shutdown(running, grace))
        self.running.remove(running)

    def close(self) -> None:
        for running in list(self.running):
            with contextlib.suppress(Exception):
                self.stop_server(running)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def model_config(url: str, **ai: Any) -> dict[str, Any]:
    return {
        "models": {"fake": {"provider": "generic", "base_url": url, "api_key": "k", "model": "fake-model",
                            "max_retries": 3, "retry_budget_seconds": 20.0}},
        "default_model": "fake",
        "ai": ai,
        # Scripts answer the turn's own steps; a test that wants the harvest's extra request opts in.
        "loop": {"memory": False, "mcp": False, "harvest": False},
    }


class Conversation:
    """One ConverseBatched stream from the client side, iterated event by event."""

    def __init__(self, stub: loop_pb2_grpc.AgentLoopStub, first: loop_pb2.ClientMessage,
                 timeout: float = EVENT_TIMEOUT_S) -> None:
        self._outbox: queue.Queue[loop_pb2.ClientMessage | None] = queue.Queue()
        self._outbox.put(first)
        self.call = stub.ConverseBatched(self._messages(), timeout=timeout)
        self.events: list[loop_pb2.TurnEvent] = []

    def _messages(self) -> Iterator[loop_pb2.ClientMessage]:
        while True:
            message = self._outbox.get()
            if message is None:
                return
            yield message

    def send(self, message: loop_pb2.ClientMessage) -> None:
        self._outbox.put(message)

    def __iter__(self) -> Iterator[loop_pb2.TurnEvent]:
        try:
            for batch in self.call:
                for event in batch.events:
                    self.events.append(event)
                    yield event
        finally:
            self._outbox.put(None)

    def drain(self, on_event: Callable[[loop_pb2.TurnEvent, Conversation], None] | None = None
              ) -> list[loop_pb2.TurnEvent]:
        for event in self:
            if on_event is not None:
                on_event(event, self)
        return self.events

    def cancel(self) -> None:
        self.call.cancel()
        self._outbox.put(None)


class LoopStack:
    """The loop service (+ optional tools service) and a blocking client."""

    def __init__(self, short_dir: Path, workspace: Path, fake: FakeModelServer, config: dict[str, Any],
                 with_tools: bool | dict[str, Any], memory: str = "",
                 mcp_servers: list[dict[str, Any]] | None = None) -> None:
        from services.loop.main import build

        self.dir = short_dir
        self.workspace = workspace
        self.fake = fake
        self.services = ServiceThread()
        data = dict(config)
        if with_tools:
            from services.tools.main import build as build_tools

            tools_addr = f"unix:{short_dir}/tools.sock"
            # A dict is the tools service's own (user-layer) config data, e.g. an egress proxy sandbox.
            tools_config = Config(data=with_tools if isinstance(with_tools, dict) else {
                "tools": {"sandbox": {"mode": "bwrap"}}})
            self.tools = self.services.serve(tools_addr, build_tools(tools_config))
            data["endpoints"] = {"tools": tools_addr}
        else:
            data["endpoints"] = {"tools": f"unix:{short_dir}/no-tools.sock"}
        if memory:  # "service": a real memory service; "down": configured but nothing listens
            data["loop"] = {**data.get("loop", {}), "memory": True}
            memory_addr = f"unix:{short_dir}/memory.sock"
            if memory == "service":
                from services.memory.main import build as build_memory

                self.memory = self.services.serve(memory_addr, build_memory(Config(data={})))
            data["endpoints"]["memory"] = memory_addr
        if mcp_servers is not None:
            from services.mcp_gateway.main import build as build_gateway

            data["loop"] = {**data.get("loop", {}), "mcp": True}
            gateway_addr = f"unix:{short_dir}/mcp.sock"
            self.gateway = self.services.serve(gateway_addr, build_gateway(Config(data={"mcp": {
                "servers": mcp_servers}})))
            data["endpoints"]["mcp_gateway"] = gateway_addr
        self.config = Config(data=data)
        self.service_def = build(self.config)
        self.loop_server = self.services.serve(f"unix:{short_dir}/loop.sock", self.service_def)
        self.channel = grpc.insecure_channel(f"unix:{short_dir}/loop.sock")
        self.stub = loop_pb2_grpc.AgentLoopStub(self.channel)

    @property
    def runtime(self) -> Any:
        return self.service_def.extra["runtime"]

    def open(self, session_id: str = "", *, auto_approve: bool = True, interactive: bool = False
             ) -> loop_pb2.OpenSessionLoopResponse:
        response: loop_pb2.OpenSessionLoopResponse = self.stub.OpenSession(loop_pb2.OpenSessionLoopRequest(
            workspace=str(self.workspace), session_id=session_id, auto_approve=auto_approve,
            interactive=interactive), timeout=30)
        return response

    def start(self, session_id: str, text: str, timeout: float = EVENT_TIMEOUT_S) -> Conversation:
        """Start a turn; ``timeout`` bounds the whole stream (a long session's turn needs more)."""
        return Conversation(self.stub, loop_pb2.ClientMessage(start=loop_pb2.StartTurn(session_id=session_id,
                                                                                       input=text)), timeout)

    def attach(self, session_id: str, after_seq: int) -> Conversation:
        return Conversation(self.stub, loop_pb2.ClientMessage(
            attach=loop_pb2.AttachTurn(session_id=session_id, after_seq=after_seq)))

    def turn(self, text: str, session_id: str = "", **open_kw: Any) -> tuple[str, list[loop_pb2.TurnEvent]]:
        sid = session_id or self.open(**open_kw).session_id
        return sid, self.start(sid, text).drain()

    def close(self) -> None:
        self.channel.close()
        self.services.close()


def finished(events: list[loop_pb2.TurnEvent]) -> loop_pb2.TurnFinished:
    ends = [e.turn_finished for e in events if e.WhichOneof("event") == "turn_finished"]
    assert ends, f"no TurnFinished among {[e.WhichOneof('event') for e in events]}"
    return ends[-1]


def kinds(events: list[loop_pb2.TurnEvent]) -> list[str]:
    return [str(e.WhichOneof("event")) for e in events]


def status_name(end: loop_pb2.TurnFinished) -> str:
    return loop_pb2.TurnStatus.Name(end.status).removeprefix("TURN_STATUS_").lower()




# ---- fixtures (conftest.py and e2e modules import these) ----


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

    def make(script: list[dict[str, Any]] | None = None, *, with_tools: bool | dict[str, Any] = False, memory: str = "",
             mcp_servers: list[dict[str, Any]] | None = None, loop: dict[str, Any] | None = None,
             sections: dict[str, Any] | None = None, **ai: Any) -> LoopStack:
        if script is not None:
            fake.load_script(script)
        config = model_config(fake.url, **ai)
        config["loop"].update(loop or {})
        config.update(sections or {})  # other top-level sections as the user config has them (hooks, skills)
        stack = LoopStack(short_dir, workspace, fake, config, with_tools, memory, mcp_servers)
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.close()
