"""Files the supervisor keeps in the runtime dir, and process-group helpers.

Layout of ``<runtime>/``::

    supervisor.lock   flock held by the one running supervisor for its whole life
    supervisor.pid    its pid (informational; the lock is the truth)
    supervisor.json   state for ``ai-coding status``, replaced atomically on every change
    <name>.sock       each service's socket
    logs/<name>.log   each service's log (its stdout/stderr are appended there too)
    logs/supervisor.log

Only the standard library is imported here: ``status`` and ``down`` must stay cheap.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from services.kernel.pids import pid_alive as pid_alive  # stdlib only; shared with the loop's crash cleanup

LOCK_FILE = "supervisor.lock"
PID_FILE = "supervisor.pid"
STATE_FILE = "supervisor.json"


@dataclass
class ServiceState:
    """What the supervisor knows about one service process."""

    pid: int | None = None
    """Pid of the ``ai-coding serve NAME`` process (None while it is down)."""
    endpoint: str = ""
    """Where it listens, e.g. ``unix:///run/user/1000/ai-coding/loop.sock``."""
    restarts: int = 0
    """How many times the supervisor restarted it after a crash."""
    started_at: float | None = None
    """Unix time the current process was started."""
    state: str = "starting"
    """starting, running, backoff (waiting to restart), on_demand (not running: the supervisor listens
    on its socket and starts it with the first connection; services/kernel/on_demand.py) or stopped."""
    last_exit: int | None = None
    """Exit code (negative: signal) of the last process that died."""
    next_start_at: float | None = None
    """When a crashed service will be started again."""


@dataclass
class SupervisorState:
    """The whole of ``supervisor.json``."""

    pid: int
    started_at: float
    runtime_dir: str
    services: dict[str, ServiceState] = field(default_factory=dict)


def state_to_json(state: SupervisorState) -> str:
    return json.dumps(asdict(state), indent=2, sort_keys=True)


def state_from_json(text: str) -> SupervisorState:
    raw = json.loads(text)
    services = {name: ServiceState(**svc) for name, svc in raw.get("services", {}).items()}
    return SupervisorState(
        pid=int(raw["pid"]), started_at=float(raw["started_at"]), runtime_dir=str(raw["runtime_dir"]),
        services=services,
    )


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a reader sees the old or the new file, never a torn one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_state(rdir: Path) -> SupervisorState | None:
    """The last state the supervisor wrote, or None when there is none (or it is unreadable)."""
    try:
        return state_from_json((rdir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


@contextlib.contextmanager
def try_lock(rdir: Path) -> Iterator[bool]:
    """Try to take the supervisor lock without blocking; yields whether we hold it."""
    fd = os.open(rdir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def acquire_lock(rdir: Path) -> int | None:
    """Take the supervisor lock for the life of this process: the fd, or None when held elsewhere."""
    fd = os.open(rdir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def supervisor_running(rdir: Path) -> bool:
    """True while some process holds the supervisor lock of ``rdir``."""
    if not (rdir / LOCK_FILE).exists():
        return False
    with try_lock(rdir) as got:
        return not got


def read_pid(rdir: Path) -> int | None:
    try:
        return int((rdir / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


def group_alive(pgid: int) -> bool:
    """True while any process of group ``pgid`` is alive (zombies included)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def wait_until(predicate: Any, timeout: float, interval: float = 0.05) -> bool:
    """Poll ``predicate()`` until it is true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def stop_group(pgid: int, grace: float) -> None:
    """SIGTERM a whole process group, then SIGKILL whatever is left after ``grace`` seconds."""
    signal_group(pgid, signal.SIGTERM)
    if not wait_until(lambda: not group_alive(pgid), grace):
        signal_group(pgid, signal.SIGKILL)


def _refuses_connections(sock: Path) -> bool:
    """True when nothing listens on ``sock`` (stale). A listener that is slow to accept
    (a full backlog makes connect time out) is still a listener: keep its socket."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(0.5)
    try:
        probe.connect(str(sock))
    except (ConnectionRefusedError, FileNotFoundError):
        return True
    except OSError:
        return False
    finally:
        probe.close()
    return False


def is_service_process(pid: int, name: str = "") -> bool:
    """True when ``pid`` runs ``ai-coding serve NAME`` (any service when ``name`` is empty), so a
    pid recorded by a supervisor that died is not signalled after the system gave it to someone else."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if b"serve" not in argv:
        return False
    return not name or name.encode() in argv[argv.index(b"serve") + 1 :]


def left_by_a_dead_supervisor(state: SupervisorState | None, names: list[str]) -> list[str]:
    """Those of ``names`` still running as ``state`` (what a supervisor recorded) has them: call it only
    when no supervisor holds the lock, so they are a killed one's, going since PDEATHSIG sent them
    SIGTERM, not services started by hand. Checked by command line, not by pid alone."""
    if state is None:
        return []
    return [name for name in names if (svc := state.services.get(name)) is not None and svc.pid
            and pid_alive(svc.pid) and is_service_process(svc.pid, name)]


def stop_leftover_services(state: SupervisorState, grace: float) -> list[str]:
    """Stop the services a supervisor that died left behind (``state`` is what it recorded): they got
    SIGTERM when it died (PDEATHSIG) but may still be draining, holding their sockets. Returns their names."""
    stopped = left_by_a_dead_supervisor(state, list(state.services))
    for name in stopped:
        stop_group(state.services[name].pid or 0, grace)  # each service leads its own process group
    return stopped


def remove_stale_files(rdir: Path, services: list[str]) -> list[str]:
    """Remove sockets nobody serves and the old pid/state files; returns what was removed.

    Only call this while holding the supervisor lock: a supervisor that starts meanwhile writes
    its own pid and state files, and they are not stale (see :func:`clear_stale_files`).
    """
    from services.kernel.on_demand import marker_path

    removed: list[str] = []
    for name in services:
        sock = rdir / f"{name}.sock"
        if (sock.exists() or sock.is_symlink()) and _refuses_connections(sock):
            sock.unlink()
            removed.append(sock.name)
        marker = marker_path(sock)
        if marker.exists() and not sock.exists():  # a supervisor killed while it listened there
            marker.unlink()
            removed.append(marker.name)
    for fname in (PID_FILE, STATE_FILE):
        path = rdir / fname
        if path.exists():
            path.unlink()
            removed.append(fname)
    return removed


def clear_stale_files(rdir: Path, services: list[str]) -> list[str]:
    """:func:`remove_stale_files` for a client: only when no supervisor holds the lock (none runs)."""
    with try_lock(rdir) as got:
        return remove_stale_files(rdir, services) if got else []


def _parent_map() -> dict[int, list[int]]:
    """ppid -> child pids, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may contain spaces: split after the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (children, grandchildren, ...)."""
    tree = _parent_map()
    out: list[int] = []
    stack = list(tree.get(pid, []))
    while stack:
        child = stack.pop()
        out.append(child)
        stack.extend(tree.get(child, []))
    return out
