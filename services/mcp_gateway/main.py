"""``ai-coding serve mcp_gateway``: build the gateway service from the config."""

from __future__ import annotations

from pathlib import Path

import grpc
from ai_coding.v1 import mcp_gateway_pb2_grpc

from services.kernel.config import Config
from services.kernel.endpoints import PROTO_SERVICE
from services.kernel.server import ServiceDef
from services.mcp_gateway.accounts import Accounts
from services.mcp_gateway.auth_store import AuthStore, default_auth_path
from services.mcp_gateway.gateway import Gateway
from services.mcp_gateway.servicer import McpGatewayServicer
from services.mcp_gateway.settings import load_mcp_settings, sidecar_path


def build(config: Config, *, sidecar: Path | None = None, auth_path: Path | None = None) -> ServiceDef:
    """The gateway as a ServiceDef: owner tasks start on_start (never blocking), close on_shutdown."""
    side = sidecar or sidecar_path()
    settings = load_mcp_settings(config, side)
    accounts = Accounts(AuthStore(auth_path or default_auth_path()))
    gateway = Gateway(settings, accounts.open, side)
    accounts.gateway = gateway
    servicer = McpGatewayServicer(gateway, accounts)

    def register(server: grpc.aio.Server) -> None:
        mcp_gateway_pb2_grpc.add_McpGatewayServicer_to_server(servicer, server)

    async def on_shutdown() -> None:
        await accounts.aclose()
        await gateway.aclose()

    return ServiceDef(
        name="mcp_gateway",
        proto_services=[PROTO_SERVICE["mcp_gateway"]],
        register=register,
        on_start=gateway.start,
        on_shutdown=on_shutdown,
        busy=gateway.busy,
        extra={"gateway": gateway, "accounts": accounts},
    )
