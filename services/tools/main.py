"""``ai-coding serve tools``: build the ToolRuntime service from the (user-layer) config."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

import grpc
from ai_coding.v1 import tools_pb2, tools_pb2_grpc

from services.kernel.config import Config
from services.kernel.datadir import data_dir
from services.kernel.endpoints import runtime_dir
from services.kernel.netpolicy import NetConfig
from services.kernel.server import ServiceDef
from services.kernel.workspace import private_dirs
from services.tools import placeholders, reaper
from services.tools.config import SANDBOX_MODES, SandboxConfig, ToolsConfig, network_mode
from services.tools.errors import ToolError
from services.tools.runtime import ToolRuntime, find_ripgrep
from services.tools.servicer import ToolRuntimeServicer

SERVICE_NAME = tools_pb2.DESCRIPTOR.services_by_name["ToolRuntime"].full_name


def load_tools_config(config: Config) -> ToolsConfig:
    """The typed ``tools`` section. A bad value (wrong type, out of range, an unknown sandbox mode)
    is left out with a warning naming the key (``config.warnings``): the service starts on the
    default (the bwrap sandbox), it never refuses to start, and sessions are told."""
    tools = config.section(ToolsConfig, "tools")
    if tools.sandbox.mode not in SANDBOX_MODES:
        config.warnings.append(f"config key `tools.sandbox.mode` is {tools.sandbox.mode!r}, not one of "
                               f"{', '.join(SANDBOX_MODES)}; it is ignored (the default applies)")
        tools.sandbox = dataclasses.replace(tools.sandbox, mode=SandboxConfig().mode)
    try:
        network_mode(tools.sandbox.network)
    except ValueError as exc:
        config.warnings.append(f"{exc} (off: no network; proxy: only allow_domains, through the proxy; host: the "
                               "host's network); it is ignored (the default applies)")
        tools.sandbox = dataclasses.replace(tools.sandbox, network=SandboxConfig().network)
    return tools


def build(config: Config) -> ServiceDef:
    """The tools service definition (the private dirs are hidden from sandboxed commands)."""
    net = config.section(NetConfig, "net")
    reaper.set_scope(runtime_dir(config))
    reaper.sweep_dead_owners()  # commands of a tools service that was killed along with its guardian
    placeholders.keep_journal(data_dir() / "tools" / "placeholders")  # and the empty .git it left
    runtime = ToolRuntime(load_tools_config(config), private=private_dirs(config), ripgrep=find_ripgrep(), net=net)
    runtime.shown_warnings = [*config.warnings, *runtime.shown_warnings]  # every session is told
    servicer = ToolRuntimeServicer(runtime)

    def register(server: grpc.aio.Server) -> None:
        tools_pb2_grpc.add_ToolRuntimeServicer_to_server(servicer, server)

    tools = runtime.config
    self_test = sandbox_self_test(runtime) if tools.sandbox.self_test and tools.sandbox.mode == "bwrap" else None

    async def on_start() -> None:
        if tools.sandbox.mode == "bwrap":  # the first session's check, done now (see BwrapProbe)
            runtime.probe.start()

    return ServiceDef(name="tools", proto_services=[SERVICE_NAME], register=register, on_shutdown=runtime.close_all,
                      on_start=on_start, self_test=self_test, extra={"runtime": runtime})


def sandbox_self_test(runtime: ToolRuntime) -> Callable[[], Awaitable[str | None]]:
    """Start one bwrap instance the way every command does: None when it ran, else why not."""
    async def check() -> str | None:
        try:
            await runtime.probe.ensure()
        except ToolError as err:
            return f"sandbox self-test: {err}"
        return None

    return check
