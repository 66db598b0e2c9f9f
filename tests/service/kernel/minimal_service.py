"""A real service process on the kernel bootstrap with nothing but health and reflection.

Run as ``python minimal_service.py NAME``. It lets the supervisor and kernel tests drive
real processes, sockets and health checks without depending on the four services' code.
Environment knobs (all optional):

- ``AIC_TEST_SHUTDOWN_MARKER``: a file the shutdown hook writes (proves a graceful stop);
- ``AIC_TEST_CHILDREN=1``: start a grandchild in the same process group and one in its own
  session (the kind of process a supervisor must still clean up);
- ``AIC_TEST_DRAIN_SECONDS``: how long the shutdown hook takes (health is NOT_SERVING meanwhile);
- ``AIC_TEST_CRASH``: service name that exits with code 3 right after starting;
- ``AIC_TEST_START_SECONDS``: how long on_start takes after SERVING (as the loop's runtime build);
- ``AIC_TEST_BIND_DELAY``: ``NAME=SECONDS``, how long service NAME waits before it binds its socket;
- ``AIC_TEST_EXIT_BEFORE_BIND``: service name that exits with code 3 before it binds anything.

Besides health it answers ``/test.Minimal/Wait`` (:data:`WAIT_METHOD`): the request's bytes are a
number of seconds to wait before answering with the service's pid, a call of the service's own as
far as its idleness goes (health checks are not).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import grpc

from services.kernel.config import Config
from services.kernel.endpoints import PROTO_SERVICE
from services.kernel.server import ServiceDef, run_service

NAME = sys.argv[1] if __name__ == "__main__" else ""


async def _on_start() -> None:
    if os.environ.get("AIC_TEST_CRASH") == NAME:
        os._exit(3)
    if os.environ.get("AIC_TEST_CHILDREN") == "1":
        subprocess.Popen(["sleep", "300"])
        subprocess.Popen(["sleep", "301"], start_new_session=True)
    start = float(os.environ.get("AIC_TEST_START_SECONDS", "0"))
    if start:
        await asyncio.sleep(start)


async def _on_shutdown() -> None:
    drain = float(os.environ.get("AIC_TEST_DRAIN_SECONDS", "0"))
    if drain:
        await asyncio.sleep(drain)
    marker = os.environ.get("AIC_TEST_SHUTDOWN_MARKER")
    if marker:
        Path(f"{marker}.{NAME}").write_text("drained")


WAIT_METHOD = "/test.Minimal/Wait"


async def _wait(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    await asyncio.sleep(float(request or b"0"))
    return str(os.getpid()).encode()


def _register(server: grpc.aio.Server) -> None:
    handler = grpc.unary_unary_rpc_method_handler(_wait)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Minimal", {"Wait": handler}),))


def build(config: Config) -> ServiceDef:
    return ServiceDef(name=NAME, proto_services=[PROTO_SERVICE[NAME]], register=_register,
                      on_start=_on_start, on_shutdown=_on_shutdown)


if __name__ == "__main__":
    if os.environ.get("AIC_TEST_EXIT_BEFORE_BIND") == NAME:
        sys.exit(3)
    who, _, delay = os.environ.get("AIC_TEST_BIND_DELAY", "").partition("=")
    if who == NAME:
        time.sleep(float(delay))
    sys.exit(run_service(build, NAME))
