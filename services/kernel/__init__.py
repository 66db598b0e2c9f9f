"""What every ai-coding service shares: config, endpoints, server bootstrap,
health/reflection, the auth interceptor, logging, errors and ids.

Keep this package free of heavy imports (no openai, no mcp): the CLI client
imports parts of it.

Importing it turns gRPC's fork handlers off (``GRPC_ENABLE_FORK_SUPPORT=0``), before
grpc itself is loaded: every process of ours imports this package first (the CLI,
``ai-coding serve``, the supervisor, the REPL, the test process). grpcio 1.8x runs its
pthread_atfork handlers on every real ``fork()`` (pexpect's pty spawn, ``Popen`` with
``preexec_fn``); with channels live they restart the EventEngine poller in the child,
whose epoll fd the child then closes before ``exec``: the poller aborts the child
("epoll_wait error: Bad file descriptor", SIGABRT) about once in 30 forks, measured
here. That was the REPL that "exited before its prompt" in full-suite runs (the test
process had gRPC live from earlier tests; alone it had none, so it never showed).
Nothing of ours uses gRPC in a forked child (every child execs), so the handlers
only do harm. tests/service/kernel/test_kernel_fork.py forks under live gRPC to pin it.
"""

import os

os.environ["GRPC_ENABLE_FORK_SUPPORT"] = "0"

__version__ = "0.1.0"
