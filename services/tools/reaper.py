"""Every process a command starts dies with it, also the ones that left its process group.

A command runs as the leader of its own process group, and killing the group ends it and
what it forked, but a descendant that calls ``setsid`` (``setsid sleep 1000 &``, a daemon's
double fork) is in another group and survives, reparented to PID 1. In the bwrap sandbox the
PID namespace ends them all; with the sandbox off (``tools.sandbox.mode: none``) this module
does: every command carries ``AI_CODING_TOOLS_RUN=<owner>/<n>`` in its environment, which
its descendants inherit whatever group or session they move to, and ending the command kills
every process of ours whose environment holds that value (read from ``/proc``, so it finds a
process however far it was reparented). cgroups would be exact but need a delegated
hierarchy, which an unprivileged service rarely has; a process that clears its environment
(``env -i``) escapes this net, a limit of running without the sandbox.

When the service itself is killed (SIGKILL: nothing of it runs), a guardian child it started
sees its pipe close and kills every marked process of that owner; a service that starts also
sweeps the marked processes of owners that are gone (the guardian was killed too). An owner is
named within a scope, the user and the runtime directory (``<uid>.<hash>:<pid>.<start>``): a
service sweeps only its own scope's leftovers, never another user's (a service run as root reads
every environ) or another installation's, whose own next start is theirs to clean.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import subprocess
import sys
from pathlib import Path

from services.tools.guardian import MARKER as MARKER
from services.tools.guardian import kill_marked as kill_marked
from services.tools.guardian import marks as _marks

_counter = itertools.count(1)
_scope: str | None = None


def set_scope(runtime_dir: Path) -> None:
    """Name this service's owners within the user's ``runtime_dir`` (a service sets it at start)."""
    global _scope
    digest = hashlib.sha256(str(runtime_dir.expanduser().resolve()).encode()).hexdigest()[:10]
    _scope = f"{os.getuid()}.{digest}"


def scope() -> str:
    """This service's scope (the environment's runtime dir when :func:`set_scope` was not called)."""
    if _scope is None:
        from services.kernel.endpoints import runtime_dir

        set_scope(runtime_dir())
    assert _scope is not None
    return _scope


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks (field 22 of /proc/PID/stat), None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_token(pid: int | None = None) -> str:
    """This service's name in the marker: its pid and start time (a reused pid is another owner)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{_start_time(pid) or 0}"


def owner_alive(token: str) -> bool:
    """The service named by ``token`` (an :func:`owner_token`) still runs."""
    pid, _, started = token.partition(".")
    return pid.isdigit() and _start_time(int(pid)) == started


def owner_mark() -> str:
    """This service as an owner in markers: its scope and :func:`owner_token`."""
    return f"{scope()}:{owner_token()}"


def new_run_token() -> str:
    """The marker value of one command started now by this service."""
    return f"{owner_mark()}/{next(_counter)}"


def marked_env(env: dict[str, str], token: str) -> dict[str, str]:
    return {**env, MARKER: token}


def sweep_dead_owners() -> int:
    """Kill the marked processes of services that are gone (run at a tools service's start)."""
    owners = {value.split("/", 1)[0] for value in _marks().values()}
    killed = 0
    for owner in owners:
        owner_scope, _, token = owner.rpartition(":")
        if owner_scope != scope():
            continue  # another user's or another runtime dir's: not this service's to judge
        if owner_alive(token):
            continue  # that service still runs: its processes are its own
        killed += kill_marked(owner)
    return killed


_GUARDIAN_SCRIPT = str(Path(__file__).resolve().with_name("guardian.py"))


class Guardian:
    """A child process that outlives a SIGKILL of this service just long enough to end its commands.

    It reads a pipe whose write end only this service holds; when the service dies the pipe
    reads end-of-file and the guardian kills every process marked with the service's owner."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None

    def ensure(self) -> None:
        """Start the guardian once (cheap to call before every command): ``services/tools/guardian.py``
        as a script, without ``site`` (it needs nothing but the standard library)."""
        if self._proc is not None and self._proc.poll() is None:
            return
        env = {k: v for k, v in os.environ.items() if k != MARKER}
        self._proc = subprocess.Popen([sys.executable, "-S", _GUARDIAN_SCRIPT, owner_mark()],
                                      stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      env=env, start_new_session=True, close_fds=True)

