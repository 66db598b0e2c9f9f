"""The egress proxy under a flood leaks nothing: held half-requests, slow clients and normal
requests at once against one gate (real Unix socket, real origin on 127.0.0.1); afterwards every
connection, task and descriptor is gone. Timing figures live in bench/egress.py."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Iterator

import pytest

from services.kernel.netpolicy import AddressPolicy, parse_pins
from services.kernel.netrules import expand
from services.tools.egress.proxy import EgressProxy, Limits
from services.tools.egress.rules import EgressRules
from tests.support.egress_sites import SECRET_PAGE, Origin, served


@pytest.fixture
def web() -> Iterator[Origin]:
    yield from served()


async def _get(path: str, port: int) -> bytes:
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(f"GET http://web.test:{port}/hello HTTP/1.1\r\nHost: web.test:{port}\r\n\r\n".encode())
    body = await reader.read()
    writer.close()
    return body


async def _flood(web: Origin) -> tuple[int, int, int, int, list[bytes], bool, int]:
    rules = EgressRules(expand([f"web.test:{web.port}"]), [], [],
                        AddressPolicy(parse_pins({"web.test": f"127.0.0.1:{web.port}"})))
    proxy = EgressProxy(rules, dataclasses.replace(Limits(), head_seconds=1.0, concurrent_per_gate=150))
    fds_before, tasks_before = len(os.listdir("/proc/self/fd")), len(asyncio.all_tasks())
    gate = await proxy.open_gate("s1")
    held = []
    for _ in range(300):  # half a request head each, never finished; 150 over the bound are dropped
        _, writer = await asyncio.open_unix_connection(gate.path)
        writer.write(b"GET http://web.test/ HTTP/1.1\r\nHost: we")
        held.append(writer)
    normal = await asyncio.gather(*(_get(gate.path, web.port) for _ in range(5)), return_exceptions=True)
    await asyncio.sleep(1.5)  # the head deadline ends every half request
    normal += await asyncio.gather(*(_get(gate.path, web.port) for _ in range(5)))
    peak = len(gate.tasks)
    for writer in held:
        writer.close()
    await gate.close()
    gone = not os.path.exists(gate.dir)
    await asyncio.sleep(0.1)
    return (fds_before, len(os.listdir("/proc/self/fd")), tasks_before, len(asyncio.all_tasks()),
            [b for b in normal if isinstance(b, bytes)], gone, proxy.active + peak)


def test_a_flood_of_half_requests_ends_by_the_head_deadline_and_leaves_nothing_behind(web: Origin) -> None:
    fds_before, fds_after, tasks_before, tasks_after, answers, gone, left = asyncio.run(_flood(web))
    assert sum(SECRET_PAGE in a for a in answers) >= 5  # after the deadline, normal requests get through
    assert fds_after <= fds_before and tasks_after <= tasks_before
    assert gone and left == 0  # socket dir removed; no connection still counted or served
