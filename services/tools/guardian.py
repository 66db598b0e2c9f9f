"""The reaper's guardian process, and the kill of marked processes it shares with the service.

:class:`services.tools.reaper.Guardian` starts this file as a script of its own, ``python -S
guardian.py OWNER``: it only waits for its pipe to close and then kills the owner's marked
processes, so it imports nothing but what the standard library starts with (no ``site``, no
package of ours). Started as ``python -m services.tools.reaper`` it paid ~25 ms of CPU to start
(``site``, ``hashlib``'s OpenSSL, ``subprocess``, ``pathlib``), on the other core while the tools
service ran its first command, which is a turn's first ``bash`` (bench/startup.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

MARKER = "AI_CODING_TOOLS_RUN"
# Kill rounds: a process forking while it is killed can add a child after a scan; each round
# finds those. Measured: a `while :; do setsid sleep 9 & done` loop is gone after 2-3 rounds.
_ROUNDS = 20


def marks() -> dict[int, str]:
    """Every process of ours that carries a marker, and its value (others' environs are unreadable)."""
    found: dict[int, str] = {}
    needle = f"{MARKER}=".encode()
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        start = environ.find(needle)
        if start < 0 or (start > 0 and environ[start - 1] != 0):
            continue
        end = environ.find(b"\0", start)
        found[int(name)] = environ[start + len(needle):end if end >= 0 else None].decode(errors="replace")
    return found


def kill_marked(prefix: str) -> int:
    """SIGKILL every process whose marker is ``prefix`` or starts with ``prefix/``; how many were killed.

    Blocking (it reads /proc): call it off the event loop."""
    killed = 0
    for _ in range(_ROUNDS):
        victims = [pid for pid, value in marks().items() if value == prefix or value.startswith(prefix + "/")]
        if not victims:
            break
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    return killed


def guard(owner: str) -> None:
    """The guardian's body: wait for the service's end (EOF on stdin), then end its commands."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a supervisor's TERM to the group is the service's to handle
    with contextlib.suppress(OSError):
        while os.read(0, 4096):
            pass
    kill_marked(owner)


if __name__ == "__main__":
    guard(sys.argv[1])
