"""Who keeps the services up: a shared ``flock`` on ``<runtime>/activity.lock``.

Every client that talks to the services (a REPL, ``run``, ``attach``, the editor and MCP front ends)
holds it shared for its whole life; the loop service holds it while a turn runs, a client follows a
session or a background child works. The supervisor's idle shutdown asks only whether it could take
the lock exclusively: the kernel drops a dead process's hold by itself, so a killed client never
keeps the services up, and there is no count to get wrong. Stdlib only: every client imports this.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

ACTIVITY_LOCK = "activity.lock"


class ActivityHold:
    """One shared hold on a runtime dir's activity lock, taken and dropped at will."""

    def __init__(self, rdir: Path) -> None:
        self.path = rdir / ACTIVITY_LOCK
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def hold(self, blocking: bool = True) -> bool:
        """Take the shared hold; whether it is held. It waits (or, not ``blocking``, gives up) only
        while an idle supervisor holds the lock exclusively to stop the services."""
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | (0 if blocking else fcntl.LOCK_NB))
        except OSError:
            os.close(fd)
            if not blocking:
                return False
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def set(self, busy: bool) -> None:
        """Hold while ``busy``, release otherwise (never waits: a service calls this)."""
        if busy:
            self.hold(blocking=False)
        else:
            self.release()


def claim_idle(rdir: Path) -> int | None:
    """The activity lock taken exclusively (an fd to keep until the services are stopped), or None
    while anyone holds it. While the fd is open, a client that comes along waits in :meth:`hold`,
    then finds no services and starts them again, instead of using services about to stop."""
    fd = os.open(rdir / ACTIVITY_LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def anyone_active(rdir: Path) -> bool:
    """True while some process holds the activity lock of ``rdir``."""
    if not (rdir / ACTIVITY_LOCK).exists():
        return False
    fd = claim_idle(rdir)
    if fd is None:
        return True
    os.close(fd)
    return False


_CLIENT_HOLDS: dict[Path, ActivityHold] = {}


def hold_for_process(rdir: Path) -> None:
    """Keep the services of ``rdir`` up for as long as this (client) process lives."""
    if rdir not in _CLIENT_HOLDS:
        hold = ActivityHold(rdir)
        with contextlib.suppress(OSError):
            hold.hold()
            _CLIENT_HOLDS[rdir] = hold
