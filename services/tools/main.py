"""``ai-coding serve tools``: build the ToolRuntime service from the (user-layer) config."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import grpc
from ai_coding.v1 import tools_pb2, tools_pb2_grpc

from services.kernel.config import Config, user_config_path
from services.kernel.endpoints import SERVICES, endpoint_for, runtime_dir
from services.kernel.errors import AiCodingError, ConfigError
from services.kernel.server import ServiceDef
from services.tools.config import SANDBOX_MODES, ToolsConfig
from services.tools.runtime import ToolRuntime, find_ripgrep
from services.tools.servicer import ToolRuntimeServicer

SERVICE_NAME = tools_pb2.DESCRIPTOR.services_by_name["ToolRuntime"].full_name


def load_tools_config(config: Config) -> ToolsConfig:
    """The typed ``tools`` section; an unknown sandbox mode is a config error naming the key."""
    tools = config.section(ToolsConfig, "tools")
    if tools.sandbox.mode not in SANDBOX_MODES:
        raise ConfigError(f"config key `tools.sandbox.mode` is {tools.sandbox.mode!r}",
                          hint=f"Use one of: {', '.join(SANDBOX_MODES)}.")
    return tools


def private_dirs(config: Config, env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Directories no workspace may contain and no sandboxed command may see, with what each is: the
    runtime dir and every Unix socket's directory (the services: calling them directly would skip the
    permission gate), the user config's directory (the trusted layer) and the data dir (MCP tokens)."""
    environ = os.environ if env is None else env
    dirs = [("the runtime dir with the service sockets", str(runtime_dir(config, environ)))]
    for service in SERVICES:
        try:
            endpoint = endpoint_for(service, config, environ)
        except AiCodingError:
            continue
        if endpoint.scheme == "unix":
            dirs.append((f"the {service} service socket", str(Path(endpoint.path).parent)))
    dirs.append(("the user config", str(user_config_path(environ).parent)))
    data = environ.get("XDG_DATA_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".local" / "share")
    dirs.append(("the ai-coding data dir", str(Path(data) / "ai-coding")))
    return dirs


def build(config: Config) -> ServiceDef:
    """The tools service definition (the private dirs are hidden from sandboxed commands)."""
    runtime = ToolRuntime(load_tools_config(config), private=private_dirs(config), ripgrep=find_ripgrep())
    servicer = ToolRuntimeServicer(runtime)

    def register(server: grpc.aio.Server) -> None:
        tools_pb2_grpc.add_ToolRuntimeServicer_to_server(servicer, server)

    return ServiceDef(name="tools", proto_services=[SERVICE_NAME], register=register, on_shutdown=runtime.close_all,
                      extra={"runtime": runtime})
