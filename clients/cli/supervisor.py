"""The supervisor: one detached process that runs and restarts the services.

``ai-coding up`` starts it in the background (``ai-coding up --foreground`` runs it in
the terminal, which is what the systemd unit does). It

- takes ``<runtime>/supervisor.lock`` with flock, so a second supervisor on the same
  runtime dir is refused while the first lives;
- stops the services a supervisor that was killed left behind (from its state file), then
  removes sockets nobody serves and old pid/state files;
- starts ``ai-coding serve NAME`` for each configured service, each in its own process
  group, and becomes a child subreaper so nothing a service starts can escape it; the loop and
  tools first, the others once those listen (:data:`FIRST`);
- listens itself on the socket of each service run on demand (``supervisor.on_demand``: memory
  and the MCP gateway), starts it when the first connection arrives and listens again when it
  stops for idleness (services/kernel/on_demand.py says how the two hand the socket over);
- restarts a service that dies with exponential backoff (1 s doubling, capped at 30 s;
  a service that stayed up for ``stable_seconds`` starts the series again) and counts
  the restart;
- on SIGTERM stops every service (SIGTERM, then SIGKILL of whatever is left after the
  grace period, grandchildren included) and removes its files.

It lives in the client package, not in services/, because it is process management for
the CLI: it speaks no gRPC and no service imports it. Decisions are the pure functions
at the top; :class:`Supervisor` only carries them out.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from clients.cli.runtime import (
    PID_FILE,
    STATE_FILE,
    ServiceState,
    SupervisorState,
    acquire_lock,
    descendants,
    read_pid,
    read_state,
    remove_stale_files,
    signal_group,
    state_to_json,
    stop_leftover_services,
    wait_until,
    write_atomic,
)
from clients.cli.supervisor_config import ALL_SERVICES as ALL_SERVICES
from clients.cli.supervisor_config import SupervisorConfig as SupervisorConfig
from clients.cli.supervisor_config import on_demand_services
from services.kernel.endpoints import socket_in_use
from services.kernel.on_demand import (
    IDLE_ENV,
    IDLE_EXIT_CODE,
    ON_DEMAND_ENV,
    TAKE_OVER_ENV,
    marker_path,
    remove_marker,
    socket_identity,
)

log = logging.getLogger("ai_coding.supervisor")

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def restart_delay(streak: int, initial: float = 1.0, cap: float = 30.0) -> float:
    """Seconds to wait before restarting after the ``streak``-th crash in a row (1-based)."""
    return float(min(initial * 2 ** max(streak - 1, 0), cap))


def next_streak(streak: int, uptime: float, stable_seconds: float = 60.0) -> int:
    """The crash streak after a crash that ended ``uptime`` seconds of running."""
    return 1 if uptime >= stable_seconds else streak + 1


def serve_command(name: str) -> list[str]:
    """The command that runs one service (the same interpreter as this process)."""
    return [sys.executable, "-m", "clients.cli.entry", "serve", name]


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: if the supervisor dies, the service gets SIGTERM.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


FIRST = ("loop", "tools")
"""Started first: what a turn needs before anything else. The loop's start is the longest (it
builds its session runtime right after SERVING); on two cores, four services starting at once gave
it a quarter of the machine. The others start once these listen (their sockets exist), once one
of these has exited (it is restarted with backoff; the rest need not wait for it), or after
:data:`DEFER_AT_MOST_SECONDS` whatever happened (a machine so loaded that the loop takes that
long to bind is one where starting the others later pays most); a client waits for every
service as before."""
DEFER_AT_MOST_SECONDS = 3.0


def first_wave(services: list[str]) -> list[str]:
    """Those of ``services`` to start at once: :data:`FIRST`, or all when none of it runs here."""
    first = [name for name in services if name in FIRST]
    return first or list(services)


class LockHeld(Exception):
    """Another supervisor holds the runtime dir."""


@dataclass
class _Child:
    name: str
    pid: int | None = None
    started: float = 0.0
    streak: int = 0
    crashed: bool = False
    """Its last process died of something else than idleness: its next start is a restart."""
    listener: socket.socket | None = None
    """Our socket at the service's path while it runs on demand and has not taken the path over."""
    listener_id: str = ""


class Supervisor:
    """Runs the services until SIGTERM; see the module docstring."""

    def __init__(self, rdir: Path, config: SupervisorConfig, endpoints: dict[str, str],
                 command: Callable[[str], list[str]] = serve_command, start_now: Iterable[str] = ()) -> None:
        self.rdir = rdir
        self.command = command
        self.config = config
        self.on_demand = on_demand_services(config, endpoints)
        """Services started by the first connection to their socket, not at once."""
        self._start_now = [name for name in start_now if name in self.on_demand]
        """Of those, the ones a client asked for at once (a cold ``ai-coding run`` that will use memory)."""
        self.state = SupervisorState(pid=os.getpid(), started_at=time.time(), runtime_dir=str(rdir))
        self.children = {name: _Child(name) for name in config.services}
        for name in config.services:
            self.state.services[name] = ServiceState(endpoint=endpoints.get(name, ""))
        self._stopping = False
        self._lock_fd: int | None = None
        self._last_busy = time.monotonic()
        self._next_idle_check = 0.0
        self._idle_fd: int | None = None  # the activity lock, held exclusively while stopping when idle
        self._first: list[str] = []
        self._deferred: list[str] = []  # not started yet: they wait for the first wave to listen
        self._defer_until = 0.0

    # ------------------------------------------------------------------ lifecycle

    def run(self) -> int:
        """Supervise until SIGTERM/SIGINT; returns the exit code."""
        self._lock_fd = acquire_lock(self.rdir)
        if self._lock_fd is None:
            pid = read_pid(self.rdir)
            raise LockHeld(
                f"another supervisor{f' (pid {pid})' if pid else ''} already runs on {self.rdir}; "
                "use `ai-coding status` to see it or `ai-coding down` to stop it"
            )
        previous = read_state(self.rdir)
        if previous is not None:  # a supervisor that was killed: its services may still be draining
            left = stop_leftover_services(previous, self.config.grace_seconds)
            if left:
                log.info("stopped services the previous supervisor (pid %d) left: %s", previous.pid, ", ".join(left))
        removed = remove_stale_files(self.rdir, ALL_SERVICES)
        if removed:
            log.info("removed stale files: %s", ", ".join(removed))
        write_atomic(self.rdir / PID_FILE, f"{os.getpid()}\n")
        ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        eager = [name for name in self.children if name not in self.on_demand]
        for name in self.on_demand:
            if not self._listen(name):
                eager.append(name)  # we cannot listen there: it starts with the others, as before
        first = first_wave(eager)
        self._first = first
        self._deferred = [name for name in eager if name not in first]
        self._deferred += [name for name in self._start_now if name not in eager]
        self._defer_until = time.monotonic() + DEFER_AT_MOST_SECONDS
        for name in first:
            self._start(name)
        self._save()
        while not self._stopping:
            self._tick()
            self._wait(0.01 if self._deferred or self._handing_over() else 0.1)
        self._stop_all()
        return 0

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stopping = True

    def _save(self) -> None:
        write_atomic(self.rdir / STATE_FILE, state_to_json(self.state))

    # ------------------------------------------------------------------ children

    def _start(self, name: str) -> None:
        logfile = self.rdir / "logs" / f"{name}.log"
        logfile.parent.mkdir(mode=0o700, exist_ok=True)
        child = self.children[name]
        env = {**os.environ, ON_DEMAND_ENV: ",".join(self.on_demand)}
        if child.listener is not None:
            env[IDLE_ENV] = str(self.config.on_demand_idle_seconds)
            env[TAKE_OVER_ENV] = child.listener_id
        with open(logfile, "ab") as out:
            proc = subprocess.Popen(
                self.command(name), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_die_with_parent, env=env,
            )
        if child.crashed:
            child.crashed = False
            self.state.services[name].restarts += 1
        child.pid, child.started = proc.pid, time.monotonic()
        svc = self.state.services[name]
        svc.pid, svc.started_at, svc.state, svc.next_start_at = proc.pid, time.time(), "running", None
        log.info("started %s (pid %d)%s", name, proc.pid, " on demand" if child.listener is not None else "")

    # ------------------------------------------------------------------ on demand

    def _socket_path(self, name: str) -> str:
        return self.state.services[name].endpoint[len("unix://"):]

    def _listen(self, name: str) -> bool:
        """Listen on ``name``'s socket for the connection that starts it; False when we cannot."""
        child, path = self.children[name], self._socket_path(name)
        if child.listener is not None and socket_identity(path) != child.listener_id:
            self._close_listener(child, path)  # a service that died while taking the path over
        if child.listener is None:
            if socket_in_use(path):  # someone else serves there: the service, started, says who
                log.warning("%s is in use by another process: %s starts with the others", path, name)
                return False
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)  # what a dead service left, or nothing
                sock.bind(path)
                os.chmod(path, 0o600)
                # The marker before the first connection can be taken: whoever sees our socket accept
                # can tell it starts the service (status must not start it by asking).
                listener_id = socket_identity(path) or ""
                write_atomic(marker_path(path), listener_id + "\n")
                sock.listen(128)
            except OSError as exc:
                sock.close()
                log.warning("cannot listen on %s for %s (%s): it starts with the others", path, name, exc)
                return False
            sock.setblocking(False)
            child.listener, child.listener_id = sock, listener_id
        svc = self.state.services[name]
        if svc.state != "backoff":
            svc.state = "on_demand"
        return True

    def _waiting_fds(self) -> dict[int, str]:
        """Listeners whose next connection starts their service now."""
        return {child.listener.fileno(): name for name, child in self.children.items()
                if child.listener is not None and child.pid is None
                and self.state.services[name].state == "on_demand"}

    def _wait(self, timeout: float) -> None:
        """Sleep ``timeout``, or less when a connection arrives for a service on demand: start it."""
        fds = self._waiting_fds()
        if not fds:
            time.sleep(timeout)
            return
        readable, _, _ = select.select(list(fds), [], [], timeout)
        for fd in readable:
            if not self._stopping:
                self._start(fds[fd])
                self._save()

    def _handing_over(self) -> bool:
        return any(c.listener is not None and c.pid is not None for c in self.children.values())

    def _hand_over(self) -> bool:
        """Close our listener of each service that now listens on its path itself: connections still
        queued on ours are refused there and reconnect to the service."""
        changed = False
        for name, child in self.children.items():
            if child.listener is None or child.pid is None:
                continue
            path = self._socket_path(name)
            if socket_identity(path) in (child.listener_id, None):
                continue  # not listening yet (the path is ours, or between its unlink and its bind)
            self._close_listener(child, path)
            changed = True
        return changed

    def _close_listener(self, child: _Child, path: str) -> None:
        if child.listener is not None:
            child.listener.close()
        child.listener, child.listener_id = None, ""
        remove_marker(path)

    def _first_wave_done(self) -> bool:
        """Every started service's Unix socket exists (a TCP one counts as listening), or one exited."""
        for name, child in self.children.items():
            if name not in self._first:
                continue
            if child.pid is None:
                return True  # it exited: restarted with backoff, nothing to wait for
            endpoint = self.state.services[name].endpoint
            if endpoint.startswith("unix://") and not os.path.exists(endpoint[len("unix://"):]):
                return False
        return True

    def _tick(self) -> None:
        changed = self._reap()
        changed = self._hand_over() or changed
        if self._deferred and (self._first_wave_done() or time.monotonic() >= self._defer_until):
            for name in self._deferred:
                if self.children[name].pid is None:  # a service on demand may have been asked for already
                    self._start(name)
            self._deferred = []
            changed = True
        now = time.time()
        for name, svc in self.state.services.items():
            if svc.state == "backoff" and svc.next_start_at is not None and now >= svc.next_start_at:
                if self.children[name].listener is not None:  # on demand: the next connection starts it
                    svc.state, svc.next_start_at = "on_demand", None
                else:
                    self._start(name)
                changed = True
        if changed:
            self._save()
        if self._idle_due():
            self._stopping = True

    def _idle_due(self) -> bool:
        """Checked once a second: stop when idle for ``idle_seconds`` (see :mod:`clients.cli.idle`)."""
        from clients.cli.idle import CHECK_EVERY_SECONDS, idle_expired, stays
        from services.kernel.activity import anyone_active, claim_idle

        now = time.monotonic()
        if now < self._next_idle_check:
            return False
        self._next_idle_check = now + CHECK_EVERY_SECONDS
        tools = self.children.get("tools")
        working = bool(tools and tools.pid and descendants(tools.pid))  # a bash command or a job runs
        if working or anyone_active(self.rdir):
            self._last_busy = now
        if not idle_expired(now, self._last_busy, self.config.idle_seconds, stays(self.rdir)):
            return False
        self._idle_fd = claim_idle(self.rdir)
        if self._idle_fd is None:  # someone took a hold since the check
            self._last_busy = now
            return False
        log.info("idle for %.0f s (no client, turn, child or job): stopping the services "
                 "(supervisor.idle_seconds; `ai-coding up --stay` keeps them)", now - self._last_busy)
        return True

    def _reap(self) -> bool:
        """Collect every exited child (ours or an orphan handed to us); schedule restarts."""
        changed = False
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return changed
            if pid == 0:
                return changed
            for name, child in self.children.items():
                if child.pid == pid:
                    self._crashed(name, os.waitstatus_to_exitcode(status))
                    changed = True

    def _crashed(self, name: str, code: int) -> None:
        child, svc = self.children[name], self.state.services[name]
        signal_group(child.pid or 0, signal.SIGKILL)  # what it started dies with it
        uptime = time.monotonic() - child.started
        child.pid = None
        if self._stopping:
            svc.pid, svc.state, svc.last_exit = None, "stopped", code
            return
        if name in self.on_demand and code == IDLE_EXIT_CODE:
            child.streak, svc.pid = 0, None
            svc.state = "on_demand"
            log.info("%s stopped after %.0f s idle; listening for its next call", name,
                     self.config.on_demand_idle_seconds)
            if not self._listen(name):
                self._start(name)
            return
        child.crashed = True
        child.streak = next_streak(child.streak, uptime, self.config.stable_seconds)
        delay = restart_delay(child.streak, self.config.backoff_initial_seconds, self.config.backoff_max_seconds)
        svc.pid, svc.state, svc.last_exit, svc.next_start_at = None, "backoff", code, time.time() + delay
        if name in self.on_demand and self._listen(name):
            # Connections wait on our socket meanwhile; the first after the delay starts it.
            log.warning("%s exited with %d after %.1f s; started again on its next call from %.0f s on",
                        name, code, uptime, delay)
            return
        log.warning("%s exited with %d after %.1f s; restarting in %.0f s", name, code, uptime, delay)

    def _stop_all(self) -> None:
        for name, child in self.children.items():
            if child.listener is not None:
                where = self._socket_path(name)
                listened = socket_identity(where) == child.listener_id
                self._close_listener(child, where)
                if listened:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(where)
        grace = self.config.grace_seconds
        leaders = [c.pid for c in self.children.values() if c.pid]
        for pid in leaders:
            os.kill(pid, signal.SIGTERM)
        wait_until(self._leaders_gone, grace)
        # Everything still below us (a stuck service, its process group, orphans) is killed.
        own_group = os.getpgrp()
        for pid in descendants(os.getpid()):
            try:
                pgid = os.getpgid(pid)
                if pgid != own_group:
                    os.killpg(pgid, signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        wait_until(self._reap_all_done, 5.0)
        for svc in self.state.services.values():
            svc.pid, svc.state = None, "stopped"
        for name in self.children:
            sock = self.rdir / f"{name}.sock"
            if sock.exists():
                sock.unlink()
        for fname in (STATE_FILE, PID_FILE):
            path = self.rdir / fname
            if path.exists():
                path.unlink()
        log.info("supervisor stopped")

    def _leaders_gone(self) -> bool:
        self._reap()
        return all(c.pid is None for c in self.children.values())

    def _reap_all_done(self) -> bool:
        self._reap()
        return not descendants(os.getpid())


def run_foreground(rdir: Path, config: SupervisorConfig, endpoints: dict[str, str],
                   start_now: Iterable[str] = ()) -> int:
    """Entry point of the supervisor process (logs to ``<runtime>/logs/supervisor.log``);
    ``start_now``: services on demand to start at once all the same."""
    from services.kernel.logs import setup_logging

    setup_logging("supervisor", rdir / "logs")
    return Supervisor(rdir, config, endpoints, start_now=start_now).run()
