"""A real gRPC server that serves grpc.health.v1 alone, as a process for client tests.

    python -m tests.support.health_server SOCKET_PATH [serving|not_serving]

With a status, the loop's service name (``ai_coding.v1.AgentLoop``) answers it; without one only
the whole server ("") answers, SERVING. It runs until killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import services.kernel  # noqa: F401  (before grpc, as in every process of ours: gRPC's fork handlers off)

LOOP_SERVICE = "ai_coding.v1.AgentLoop"


async def main(path: str, status: str) -> None:
    import grpc
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    server = grpc.aio.server()
    servicer = health.aio.HealthServicer()
    if status:
        await servicer.set(LOOP_SERVICE, health_pb2.HealthCheckResponse.SERVING if status == "serving"
                           else health_pb2.HealthCheckResponse.NOT_SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    server.add_insecure_port("unix://" + path)
    await server.start()
    await server.wait_for_termination()


def command(path: str, status: str = "") -> list[str]:
    """The argv that runs this server on ``path``."""
    return [sys.executable, "-m", "tests.support.health_server", path, *([status] if status else [])]


@contextlib.contextmanager
def running(sock: Path, status: str = "") -> Iterator[None]:
    """This server on ``sock`` (answering ``status`` for the loop) while the block runs."""
    from clients.cli.runtime import wait_until

    server = subprocess.Popen(command(str(sock), status))
    try:
        assert wait_until(sock.exists, 30)
        yield
    finally:
        server.kill()
        server.wait(timeout=30)


def client_facts(script: str, *args: str) -> dict[str, str]:
    """Run a client ``script`` (``python -c``) with ``args``; the ``name value`` lines it printed."""
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return dict(line.split(" ", 1) for line in done.stdout.splitlines())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""))
