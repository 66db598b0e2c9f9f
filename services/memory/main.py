"""``ai-coding serve memory``: build the Memory service from the config."""

from __future__ import annotations

import logging

import grpc
from ai_coding.v1 import memory_pb2_grpc as pb_grpc

from services.kernel.config import Config, LiveSection
from services.kernel.endpoints import PROTO_SERVICE
from services.kernel.server import ServiceDef
from services.memory.service import MemoryEngine
from services.memory.servicer import MemoryServicer
from services.memory.settings import MemorySettings

log = logging.getLogger("ai_coding.memory")


def build(config: Config) -> ServiceDef:
    """The memory service: one MemoryEngine (stores open per workspace on first use)."""
    settings = LiveSection(config, MemorySettings, "memory", on_warning=lambda warning: log.warning("%s", warning))
    for warning in config.warnings:  # a bad value was left out: the service runs on its default
        log.warning("%s", warning)
    engine = MemoryEngine(settings)  # follows the user file's `memory` section without a restart
    servicer = MemoryServicer(engine)

    def register(server: grpc.aio.Server) -> None:
        pb_grpc.add_MemoryServicer_to_server(servicer, server)

    async def on_shutdown() -> None:
        engine.close()

    return ServiceDef(
        name="memory", proto_services=[PROTO_SERVICE["memory"]], register=register, on_shutdown=on_shutdown,
        extra={"engine": engine},
    )
