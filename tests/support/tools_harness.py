"""Drive a real tool service from blocking code (tests and bench/tools.py; not part of the product).

:class:`ToolServiceClient` talks to a tool service at a Unix socket (for
example an ``ai-coding serve tools`` process); :class:`ThreadedToolService`
also hosts one: the server is the real one (``create_server`` + ``build``),
only its event loop lives in a thread so blocking stubs can call it.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import grpc
from ai_coding.v1 import common_pb2, tools_pb2, tools_pb2_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.kernel.config import Config
from services.kernel.server import RunningServer, create_server, shutdown
from services.tools.main import build
from services.tools.runtime import ToolRuntime


class ToolServiceClient:
    """Blocking helpers over a ToolRuntime stub at ``unix:<socket_path>``."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.address = f"unix:{socket_path}"
        self._channel: grpc.Channel | None = None

    def connect(self, timeout: float = 60.0, alive: Callable[[], bool] = lambda: True) -> None:
        """Wait for the socket (while ``alive()``), then for the channel to be ready."""
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.socket_path):
            if not alive():
                raise RuntimeError("the tool service exited before listening")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no tool service listened on {self.socket_path} within {timeout:g} s")
            time.sleep(0.05)
        self._channel = grpc.insecure_channel(self.address)
        # A health call that waits for the connection, not channel_ready_future: the latter leaves a
        # connectivity-polling thread that makes close() wait ~200 ms.
        health_pb2_grpc.HealthStub(self._channel).Check(health_pb2.HealthCheckRequest(),
                                                        timeout=max(deadline - time.monotonic(), 1.0),
                                                        wait_for_ready=True)

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    @property
    def stub(self) -> tools_pb2_grpc.ToolRuntimeStub:
        assert self._channel is not None, "connect() first"
        return tools_pb2_grpc.ToolRuntimeStub(self._channel)

    def open(self, session_id: str, root: str, **sandbox: Any) -> tools_pb2.OpenSessionResponse:
        """OpenSession with optional ``mode=``/``network=``/``secret_env_names=``/``extra_roots=``."""
        secrets = sandbox.pop("secret_env_names", [])
        extra = sandbox.pop("extra_roots", [])
        options = tools_pb2.SandboxOptions(**sandbox) if sandbox else None
        response: tools_pb2.OpenSessionResponse = self.stub.OpenSession(tools_pb2.OpenSessionRequest(
            session_id=session_id, workspace_root=root, sandbox=options, secret_env_names=secrets,
            extra_roots=extra), timeout=30)
        return response

    def call(self, session_id: str, tool: str, arguments_json: str, *, call_id: str = "c1",
             timeout: float = 0.0, dry_run: bool = False) -> tuple[list[common_pb2.ToolChunk], common_pb2.ToolResult]:
        """One CallTool: (chunks, result)."""
        stream = self.stub.CallTool(tools_pb2.CallToolRequest(
            session_id=session_id, call_id=call_id, tool=tool, arguments_json=arguments_json,
            timeout_seconds=timeout, dry_run=dry_run), timeout=700)
        chunks: list[common_pb2.ToolChunk] = []
        results: list[common_pb2.ToolResult] = []
        for item in stream:
            if item.HasField("chunk"):
                chunks.append(item.chunk)
            else:
                results.append(item.result)
        assert len(results) == 1, f"expected exactly one result, got {len(results)}"
        return chunks, results[0]



class ThreadedToolService(ToolServiceClient):
    """A tool service bound to ``unix:<socket_path>`` until :meth:`stop`."""

    def __init__(self, config: Config, socket_path: str) -> None:
        super().__init__(socket_path)
        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tool-service", daemon=True)
        self._running: RunningServer | None = None

    def start(self) -> ThreadedToolService:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(create_server(self.address, build(self.config)), self._loop)
        self._running = future.result(timeout=30)
        self._channel = grpc.insecure_channel(self.address)
        return self

    def runtime(self) -> ToolRuntime:
        """The service's runtime object (e.g. to switch grep engines in a bench)."""
        assert self._running is not None, "start() first"
        runtime = self._running.service.extra["runtime"]
        assert isinstance(runtime, ToolRuntime)
        return runtime

    def stop(self) -> None:
        self.close()
        if self._running is not None:
            asyncio.run_coroutine_threadsafe(shutdown(self._running, grace=2), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def __enter__(self) -> ThreadedToolService:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
