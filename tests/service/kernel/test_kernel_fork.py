"""A process of ours with gRPC calls in flight can fork children that exec (pexpect's pty, preexec_fn).

The REPL e2e tests spawn the client through a pty from a test process that has had gRPC
servers and channels live since earlier tests; grpcio's own fork handlers then made about
one child in thirty abort before ``exec`` (see services/kernel/__init__.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

_CHILD = textwrap.dedent("""
    import services.kernel  # what every process of ours imports first
    import subprocess, threading
    from concurrent import futures
    import grpc, pexpect
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    server = grpc.server(futures.ThreadPoolExecutor(4))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    stub = health_pb2_grpc.HealthStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
    stop = threading.Event()

    def calls():
        while not stop.is_set():
            stub.Check(health_pb2.HealthCheckRequest(), timeout=5)

    caller = threading.Thread(target=calls, daemon=True)
    caller.start()
    failures = []
    for i in range(FORKS):
        if i % 2:
            done = subprocess.run(["/bin/echo", "ok"], capture_output=True, text=True, preexec_fn=lambda: None)
            out, code = done.stdout + done.stderr, done.returncode
        else:
            child = pexpect.spawn("/bin/echo", ["ok"], encoding="utf-8")
            out = child.read()
            child.close()
            code = child.exitstatus if child.exitstatus is not None else -(child.signalstatus or 0)
        if code != 0 or out.strip() != "ok":
            failures.append(f"fork {i}: exit {code}: {out.strip()[:200]}")
    stop.set()
    caller.join(10)
    # Wait for the server's own thread too: one still raising while the interpreter finalized
    # aborted this script (a fatal error on stderr's lock) after every fork had succeeded.
    server.stop(0).wait(10)
    print(len(failures))
    print("\\n".join(failures[:3]))
""")


@pytest.mark.slow
def test_children_forked_while_grpc_calls_run_all_reach_exec() -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}  # as a user's shell has it
    done = subprocess.run([sys.executable, "-c", _CHILD.replace("FORKS", "300")], capture_output=True,
                          text=True, timeout=300, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    count, _, examples = done.stdout.partition("\n")
    assert count == "0", f"{count} of 300 children died before exec, e.g.\n{examples}"
