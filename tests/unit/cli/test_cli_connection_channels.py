"""The client makes one channel per service for its whole process, on its one loop, and closes it
at exit before that loop closes (a real gRPC server in another process; the client in a fresh one,
since the channels are process-wide)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.support.health_server import client_facts, running

_CLIENT = textwrap.dedent("""
    import asyncio, gc, sys
    import grpc
    from clients.cli import connection
    from clients.cli.connection.loop import ClientError, LoopClient
    from clients.cli.connection.services import MemoryClient
    from services.kernel.endpoints import Endpoint

    endpoint = Endpoint("loop", "unix", path=sys.argv[1])
    seen = []

    async def one_call():
        client = LoopClient(endpoint)
        seen.append(client._channel)
        try:
            await client.list_sessions("/nowhere")  # the server has no AgentLoop: UNIMPLEMENTED, but it answered
        except ClientError as err:
            assert err.status == "unimplemented", err
        finally:
            await client.close()

    for _ in range(3):  # as `run --session` does: list, open, then the turn, each through connection.run
        connection.run(one_call())

    async def memory_channel():
        return MemoryClient(Endpoint("memory", "unix", path=sys.argv[1]), "/ws")._channel

    other = connection.run(memory_channel())

    async def foreign():
        client = LoopClient(endpoint)
        owned = client._owned
        await client.close()
        return owned

    print("same", all(channel is seen[0] for channel in seen))
    print("shared", len(connection._channels))
    print("owned_on_another_loop", asyncio.run(foreign()))
    loop = connection._runner.get_loop()
    del seen[:], other  # the test's own references
    connection._close()
    gc.collect()
    print("left", len(connection._channels), sum(isinstance(o, grpc.aio.Channel) for o in gc.get_objects()))
    print("closed_loop", loop.is_closed())
""")


def test_one_channel_per_service_per_process_closed_before_the_loop(tmp_path: Path) -> None:
    sock = tmp_path / "h.sock"
    with running(sock):
        facts = client_facts(_CLIENT, str(sock))
    assert facts == {
        "same": "True",  # the three calls' clients shared one channel to the loop
        "shared": "2",  # one to the loop (its reconnect options) and one to the memory service
        "owned_on_another_loop": "True",  # a loop of its own (a benchmark's) gets its own channel
        "left": "0 0",  # at exit every channel was closed and released, none waits for the collector
        "closed_loop": "True",
    }, facts
