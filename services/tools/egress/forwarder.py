"""The in-sandbox half of the egress proxy: 127.0.0.1:PORT relayed to the bind-mounted socket.

A ``network: proxy`` sandbox has its own network namespace with only a loopback interface, so a
TCP proxy URL (what pip, npm, git, curl and cargo understand) cannot reach the host. bwrap
bind-mounts the proxy's Unix socket at :data:`SOCKET_IN_SANDBOX`, and the command starts as
``python3 -I -S -c FORWARDER PORT SOCKET bash -c COMMAND``: the forwarder binds 127.0.0.1:PORT
first (so the port is listening before the command runs), forks a relay that copies every
accepted connection to the socket, and execs the command in its own place. The relay lives in
the sandbox's pid namespace, so it ends with the command; killing it only cuts the command's
own way out (the proxy is on the host, out of reach). Running with ``-I -S``: no workspace file
on ``sys.path``, no site hooks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

PORT = 3128
SOCKET_IN_SANDBOX = "/run/ai-coding/egress.sock"
PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3")

FORWARDER = r"""
import os, socket, sys, threading, time
port, path = int(sys.argv[1]), sys.argv[2]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(256)
if os.fork():
    srv.close()
    os.execv(sys.argv[3], sys.argv[3:])
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def serve(c):
    u = socket.socket(socket.AF_UNIX)
    try:
        u.connect(path)
    except OSError:
        c.close()
        return
    t = threading.Thread(target=pipe, args=(u, c), daemon=True)
    t.start()
    pipe(c, u)
    t.join()
    c.close()
    u.close()
while True:
    try:
        c, _ = srv.accept()
    except OSError:
        time.sleep(0.05)
        continue
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


@dataclass(frozen=True)
class EgressMount:
    """What a proxy sandbox gets: the gate's socket, the python3 running the forwarder, and
    read-only files (host path, sandbox path): the CA bundle when credential rules exist."""

    socket: str
    python: str
    files: tuple[tuple[str, str], ...] = ()


def find_python() -> str | None:
    """A system python3 the sandbox can run (the host's /usr is visible read-only inside)."""
    return next((p for p in PYTHONS if os.access(p, os.X_OK)), None)


def wrap(python: str, command_argv: list[str]) -> list[str]:
    """``command_argv`` started behind the forwarder."""
    return [python, "-I", "-S", "-c", FORWARDER, str(PORT), SOCKET_IN_SANDBOX, *command_argv]


def proxy_env() -> Mapping[str, str]:
    """The variables that make pip, npm, git, curl and cargo use the proxy without setup."""
    url = f"http://127.0.0.1:{PORT}"
    no_proxy = "localhost,127.0.0.1,::1"
    env: dict[str, str] = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = url
    env["NO_PROXY"] = env["no_proxy"] = no_proxy
    env["npm_config_proxy"] = env["npm_config_https_proxy"] = url
    env["CARGO_HTTP_PROXY"] = url
    return env
