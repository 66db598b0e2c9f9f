"""Egress proxy under a flood: 500 connections and a slowloris client from inside the sandbox.

    .venv/bin/python bench/egress.py [--connections 500] [--runs 10]

A tool service in ``tools.sandbox.network: proxy`` (real bwrap) with one origin on 127.0.0.1
(pinned as web.test). A job in the sandbox opens N connections to the proxy, each sending half a
request head and holding it, plus one slowloris connection sending a byte a second. Meanwhile
`bash curl http://web.test/hello` (a normal tool call through the proxy) and `read` are timed and
compared with the same calls before the flood. After the job is stopped, the service's open file
descriptors and asyncio tasks are compared with their count before (a leak shows as a difference).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent.parent / "protos")]

from services.kernel.config import Config  # noqa: E402
from tests.support.egress_sites import Origin, serve  # noqa: E402
from tests.support.tools_harness import ThreadedToolService  # noqa: E402

FLOOD = r"""
import socket, sys, threading, time
n = int(sys.argv[1])
held = []
for i in range(n):
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
        s.sendall(b"GET http://web.test/ HTTP/1.1\r\nHost: web")
        held.append(s)
    except OSError:
        pass
print("opened", len(held), flush=True)
def slowloris():
    s = socket.create_connection(("127.0.0.1", 3128))
    for b in b"GET http://web.test/ HTTP/1.1\r\nX-a: " + b"b" * 10000:
        try:
            s.send(bytes([b]))
        except OSError:
            print("slowloris cut", flush=True)
            return
        time.sleep(1)
threading.Thread(target=slowloris, daemon=True).start()
while True:
    for s in list(held):  # reconnect what the proxy dropped, to keep the pressure on
        try:
            s.send(b"x")
        except OSError:
            held.remove(s)
            try:
                r = socket.create_connection(("127.0.0.1", 3128), timeout=5)
                r.sendall(b"GET http://web.test/ HTTP/1.1\r\n")
                held.append(r)
            except OSError:
                pass
    time.sleep(0.5)
"""


def timed(svc: ThreadedToolService, tool: str, args: dict[str, object]) -> float:
    start = time.perf_counter()
    _, result = svc.call("s1", tool, json.dumps(args))
    elapsed = (time.perf_counter() - start) * 1000
    assert result.ok, result.output
    return elapsed


def sample(svc: ThreadedToolService, port: int, runs: int) -> tuple[float, float]:
    curl = [timed(svc, "bash", {"command": f"curl -sS --max-time 20 http://web.test:{port}/hello"})
            for _ in range(runs)]
    read = [timed(svc, "read", {"path": "f.txt"}) for _ in range(runs)]
    return statistics.median(curl), statistics.median(read)


def service_state(svc: ThreadedToolService) -> tuple[int, int]:
    loop = svc._loop
    tasks = asyncio.run_coroutine_threadsafe(_count_tasks(), loop).result(10)
    return len(os.listdir("/proc/self/fd")), tasks


async def _count_tasks() -> int:
    return len(asyncio.all_tasks())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--flood-seconds", type=float, default=15.0)
    opts = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    origin = serve(Origin())
    with tempfile.TemporaryDirectory(prefix="aic-egress-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        (ws / "f.txt").write_text("hello\n")
        section = {"network": "proxy", "allow_domains": [f"web.test:{origin.port}"]}
        config = Config(data={"tools": {"sandbox": section},
                              "net": {"pinned_hosts": {"web.test": f"127.0.0.1:{origin.port}"}}})
        svc = ThreadedToolService(config, str(Path(tmp) / "t.sock")).start()
        try:
            svc.open("s1", str(ws))
            sample(svc, origin.port, 2)
            fds0, tasks0 = service_state(svc)
            before = sample(svc, origin.port, opts.runs)
            _, started = svc.call("s1", "job_start", json.dumps(
                {"command": f"/usr/bin/python3 -c '{FLOOD}' {opts.connections}", "name": "flood"}))
            job = json.loads(started.data_json)["job_id"]
            time.sleep(3)
            during = sample(svc, origin.port, opts.runs)
            peak_fds, peak_tasks = service_state(svc)
            time.sleep(max(0.0, opts.flood_seconds - 3))
            _, out = svc.call("s1", "job_output", json.dumps({"job_id": job}))
            during_late = sample(svc, origin.port, opts.runs)
            svc.call("s1", "job_stop", json.dumps({"job_id": job}))
            time.sleep(2)
            fds1, tasks1 = service_state(svc)
        finally:
            svc.stop()
            origin.stop()
    print(f"flood job: {' '.join(out.output.split())[:160]}")
    print(f"bash curl through the proxy p50: before {before[0]:.0f} ms, during the flood {during[0]:.0f} ms "
          f"(first seconds) / {during_late[0]:.0f} ms (after {opts.flood_seconds:.0f} s)")
    print(f"read p50: before {before[1]:.1f} ms, during {during[1]:.1f} ms / {during_late[1]:.1f} ms")
    print(f"service fds: {fds0} before, {peak_fds} at the peak, {fds1} after the flood (leak: {fds1 - fds0})")
    print(f"service asyncio tasks: {tasks0} before, {peak_tasks} at the peak, {tasks1} after (leak: {tasks1 - tasks0})")


if __name__ == "__main__":
    main()
