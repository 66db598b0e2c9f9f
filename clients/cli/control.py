"""Client side of the supervisor: start it, stop it, ask how the services are.

Every answer about health comes from the client itself calling grpc.health.v1 Check
on each service's endpoint; ``supervisor.json`` only adds pids, restarts and uptimes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clients.cli.runtime import (
    LOCK_FILE,
    ServiceState,
    clear_stale_files,
    descendants,
    group_alive,
    is_service_process,
    left_by_a_dead_supervisor,
    pid_alive,
    read_pid,
    read_state,
    signal_group,
    supervisor_running,
    wait_until,
)
from clients.cli.supervisor_config import ALL_SERVICES, SupervisorConfig, on_demand_services
from services.kernel.config import Config, load_config
from services.kernel.endpoints import (
    PROTO_SERVICE,
    Endpoint,
    auth_settings,
    endpoint_for,
    ensure_runtime_dir,
    parse_endpoint,
    runtime_dir,
)
from services.kernel.errors import AiCodingError, ConfigError, EndpointError, ServiceUnavailable


@dataclass
class Setup:
    """Everything the control commands resolve from the config."""

    config: Config
    rdir: Path
    supervisor: SupervisorConfig
    endpoints: dict[str, Endpoint]
    config_error: ConfigError | None = None
    """Set when the config could not be read and this setup comes from the runtime dir alone."""

    def warn_config(self, command: str) -> None:
        """Say once on stderr that the config is broken, where, and what this command used instead."""
        if self.config_error is not None:
            print(f"ai-coding {command}: warning: the config cannot be read ({self.config_error}); using the "
                  f"runtime dir {self.rdir} alone (if your config sets endpoints.runtime_dir, fix it first)",
                  file=sys.stderr)


def resolve(workspace: Path | None = None) -> Setup:
    """Load the config and resolve the runtime dir (created 0700, or checked) and endpoints."""
    config = load_config(workspace)
    rdir = ensure_runtime_dir(runtime_dir(config))
    sup = config.section(SupervisorConfig, "supervisor")
    unknown = [s for s in sup.services if s not in ALL_SERVICES]
    if unknown:
        raise AiCodingError(
            f"supervisor.services names unknown service(s): {', '.join(unknown)}",
            hint=f"Use some of: {', '.join(ALL_SERVICES)}.", reason="unknown_service",
        )
    from services.kernel.on_demand import ALLOWED

    refused = [s for s in sup.on_demand if s not in ALLOWED]
    if refused:
        raise AiCodingError(
            f"supervisor.on_demand names {', '.join(refused)}, which cannot start on demand",
            hint=f"Use some of: {', '.join(ALLOWED)} (or [] to start every service with `ai-coding up`).",
            reason="unknown_service",
        )
    endpoints = {name: endpoint_for(name, config) for name in ALL_SERVICES}
    for endpoint in endpoints.values():
        check_socket_path(endpoint)
    return Setup(config, rdir, sup, endpoints)


def on_demand(setup: Setup) -> list[str]:
    """The services the supervisor starts on demand here (see :func:`on_demand_services`)."""
    return on_demand_services(setup.supervisor, {n: str(e) for n, e in setup.endpoints.items()})


def used_at_once(setup: Setup, names: list[str]) -> list[str]:
    """The services on demand a client that needs ``names`` calls at once: those among ``names``, and
    memory with the loop (a turn asks it first thing) unless ``loop.memory`` is off. Not the gateway:
    the loop starts it when it opens a session, once an MCP server is configured."""
    from services.loop.loop_config import LoopConfig

    wanted = set(names)
    if "loop" in wanted and setup.config.section(LoopConfig, "loop").memory:
        wanted.add("memory")
    return [name for name in on_demand(setup) if name in wanted]


def started_with_up(setup: Setup) -> list[str]:
    """The services ``ai-coding up`` starts and waits for: all it runs but those on demand."""
    lazy = on_demand(setup)
    return [name for name in setup.supervisor.services if name not in lazy]


def refuse_workspace(setup: Setup, root: Path) -> None:
    """Raise :class:`~services.kernel.workspace.WorkspaceRefused` for a workspace the services
    would refuse (the filesystem root, or one holding the home, runtime, config or data dir), before
    anything is started for it. Only for a local loop (a Unix socket); a remote one judges its own
    filesystem, and says so when the session opens."""
    if setup.endpoints["loop"].scheme != "unix":
        return
    from services.kernel.workspace import private_dirs, workspace_root

    workspace_root(str(root), Path.home(), private_dirs(setup.config))


def resolve_without_config(workspace: Path | None = None) -> Setup:
    """Like :func:`resolve`, but when the config cannot be read, fall back on the runtime dir
    alone (its default or ``AI_CODING_RUNTIME_DIR``, and the endpoints the running supervisor
    recorded); ``config_error`` then holds why (see :meth:`Setup.warn_config`).

    For ``down``, ``status`` and ``logs``: a user must be able to stop the services to fix things.
    """
    try:
        return resolve(workspace)
    except ConfigError as exc:
        broken = exc
    rdir = runtime_dir(None)
    if rdir.exists():
        ensure_runtime_dir(rdir)
    state = read_state(rdir)
    endpoints = {name: fallback_endpoint(name, state.services.get(name) if state else None)
                 for name in ALL_SERVICES}
    services = [n for n in ALL_SERVICES if state is None or n in state.services]
    return Setup(Config(), rdir, SupervisorConfig(services=services), endpoints, config_error=broken)


def fallback_endpoint(name: str, recorded: ServiceState | None) -> Endpoint:
    """The endpoint a running supervisor recorded for ``name``, else the env/runtime-dir default."""
    if recorded is not None and recorded.endpoint:
        try:
            return parse_endpoint(name, recorded.endpoint, auth_settings(None))
        except AiCodingError:
            pass
    return endpoint_for(name, None)


# sockaddr_un.sun_path holds 108 bytes including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107


def check_socket_path(endpoint: Endpoint) -> None:
    """Refuse a Unix socket path the kernel cannot bind (grpc would only log a cryptic error)."""
    size = len(endpoint.path.encode())
    if endpoint.scheme == "unix" and size > MAX_SOCKET_PATH_BYTES:
        raise EndpointError(
            f"the {endpoint.service} socket path {endpoint.path} is {size} bytes; Unix sockets allow at most "
            f"{MAX_SOCKET_PATH_BYTES}",
            hint="Set AI_CODING_RUNTIME_DIR (or endpoints.runtime_dir) to a shorter directory.",
            reason="socket_path_too_long",
        )


def health_of(endpoint: Endpoint, name: str, timeout: float = 1.0) -> str:
    """SERVING, NOT_SERVING, UNREACHABLE, ... as the service itself answers."""
    from services.kernel.channels import check_health

    return check_health(endpoint, PROTO_SERVICE[name], timeout=timeout)


ON_DEMAND = "ON_DEMAND"
"""The health ``status`` reports for a service not running that its first call starts."""


def status_report(setup: Setup) -> dict[str, Any]:
    """``{"supervisor": {...}, "services": {name: {pid, endpoint, health, restarts, uptime_s}}}``."""
    from services.kernel.on_demand import waiting

    running = supervisor_running(setup.rdir)
    state = read_state(setup.rdir) if running else None
    services: dict[str, Any] = {}
    now = time.time()
    lazy = on_demand(setup) if running else []
    for name in ALL_SERVICES:
        svc = state.services.get(name, ServiceState()) if state else ServiceState()
        # Not asked when it waits for its first call: asking would start it. Nor while it stops for
        # idleness (its socket is gone: the supervisor listens there again a moment later).
        endpoint = setup.endpoints[name]
        asleep = svc.state == "on_demand" or (endpoint.scheme == "unix" and (
            waiting(endpoint.path) or (name in lazy and not os.path.exists(endpoint.path))))
        health = ON_DEMAND if asleep else health_of(endpoint, name)
        services[name] = {
            "pid": svc.pid,
            "endpoint": str(setup.endpoints[name]),
            "health": health,
            "restarts": svc.restarts,
            "uptime_s": round(now - svc.started_at, 1) if svc.pid and svc.started_at else None,
        }
    return {
        "supervisor": {"pid": state.pid if state else None, "running": running, "runtime_dir": str(setup.rdir)},
        "services": services,
    }


def _spawn_supervisor(setup: Setup, start_now: list[str] | None = None) -> subprocess.Popen[bytes]:
    logfile = setup.rdir / "logs" / "supervisor.log"
    with open(logfile, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "clients.cli.supervise", *(["--start", ",".join(start_now)] if start_now else [])],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    # A long-lived client (demo, REPL) that started the supervisor reaps it when it exits.
    threading.Thread(target=proc.wait, name="reap-supervisor", daemon=True).start()
    return proc


def _last_log_line(rdir: Path, name: str) -> str:
    try:
        lines = (rdir / "logs" / f"{name}.log").read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def lost_start_race(returncode: int | None, lock_held: bool) -> bool:
    """True when the supervisor we spawned has exited while another one holds the lock: two
    clients started the services at the same moment and the other one won."""
    return returncode is not None and lock_held


def _startup_failure(setup: Setup, proc: subprocess.Popen[bytes]) -> str | None:
    """Why start-up cannot succeed any more, or None while it still may."""
    if proc.poll() is not None:
        return f"the supervisor exited with code {proc.returncode}: {_last_log_line(setup.rdir, 'supervisor')}"
    return _service_failure(setup, proc.pid)


def _service_failure(setup: Setup, supervisor_pid: int | None) -> str | None:
    """A service that died while starting, as the supervisor ``supervisor_pid`` reports it.

    The state file of a supervisor that was killed stays until the new one replaces it; its
    exits (a service killed long ago) say nothing about this start, so they are not read."""
    state = read_state(setup.rdir)
    if state is None or supervisor_pid is None or state.pid != supervisor_pid:
        return None
    for name, svc in state.services.items():
        if svc.last_exit is not None:
            line = _last_log_line(setup.rdir, name)
            return f"the {name} service exited with code {svc.last_exit} while starting: {line}"
    return None


def wait_serving(setup: Setup, names: list[str], timeout: float, built: bool = False) -> list[str]:
    """Poll until every service in ``names`` answers SERVING; returns those that do not. ``built``: a
    service that builds something after it serves (the loop: its session runtime) answers for that
    (services/kernel/endpoints.py STARTED_SERVICE)."""
    from services.kernel.channels import check_health
    from services.kernel.endpoints import STARTED_SERVICE

    pending = list(names)
    asked = {n: STARTED_SERVICE.get(n, PROTO_SERVICE[n]) if built else PROTO_SERVICE[n] for n in names}

    def bound(endpoint: Endpoint) -> bool:
        # A service binds its socket just before it serves: until then a health call (a new gRPC
        # channel each, every 50 ms per service) only takes CPU from the services starting.
        return endpoint.scheme != "unix" or os.path.exists(endpoint.path)

    def check() -> bool:
        pending[:] = [n for n in pending if not bound(setup.endpoints[n])
                      or check_health(setup.endpoints[n], asked[n], timeout=0.5) != "SERVING"]
        return not pending

    wait_until(check, timeout, interval=0.05)
    return pending


def _check_socket_dirs(setup: Setup) -> None:
    for name in setup.supervisor.services:
        if setup.endpoints[name].scheme != "unix":
            continue
        if not Path(setup.endpoints[name].path).parent.is_dir():
            raise EndpointError(f"the directory of {setup.endpoints[name]} does not exist",
                                hint=f"Create it or fix endpoints.{name}.")


def begin(setup: Setup, names: list[str], *, quiet: bool = False) -> subprocess.Popen[bytes] | None:
    """Spawn the supervisor now, without waiting, when nothing can serve ``names`` (no supervisor,
    no socket that accepts); hand what it returns to :func:`ensure_running`, which waits for it.

    A cold ``ai-coding run`` calls it before importing what the turn needs (grpc, protobuf, the
    views: ~150 ms of one core), so the services start on the other core meanwhile. None when
    something runs or may: :func:`ensure_running` then decides as always (and raises what a start
    that cannot work raises)."""
    from services.kernel.activity import hold_for_process

    hold_for_process(setup.rdir)  # as ensure_running: a supervisor stopping for idleness finishes first
    local = [n for n in names if n in setup.supervisor.services]
    if not local or supervisor_running(setup.rdir) or any(
            setup.endpoints[n].scheme != "unix" or os.path.exists(setup.endpoints[n].path) for n in local):
        return None
    try:
        _check_socket_dirs(setup)
    except EndpointError:
        return None
    if not quiet:
        print("starting the services (ai-coding up) ...", file=sys.stderr)
    return _spawn_supervisor(setup, used_at_once(setup, names))


def start(setup: Setup, timeout: float = 20.0, spawned: subprocess.Popen[bytes] | None = None,
          start_now: list[str] | None = None, built: bool = False) -> bool:
    """Start the supervisor and wait for every local service it starts at once to serve (those on
    demand wait for their first call); with ``built``, the loop also until its session runtime is
    built (``ai-coding up``: the turn that follows waits for nothing; a client that opens a session
    at once need not wait, its OpenSession does). False when already running (also when another client started
    it at the same moment: then we wait for its services). ``spawned`` is one :func:`begin` started:
    it is waited for as if started here. ``start_now``: services on demand this client will use at
    once (the supervisor starts them right after the loop and tools; nobody waits for them here)."""
    if spawned is None and supervisor_running(setup.rdir):
        return False
    _check_socket_dirs(setup)
    proc = spawned or _spawn_supervisor(setup, start_now)
    names = started_with_up(setup)
    ours = True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ours and lost_start_race(proc.poll(), supervisor_running(setup.rdir)):
            # Another client started a supervisor at the same moment and ours found the lock
            # taken: wait for that one's services; stopping it would kill the winner's start.
            ours = False
        failure = _startup_failure(setup, proc) if ours else _service_failure(setup, read_pid(setup.rdir))
        if failure:
            if ours:
                stop(setup)
            raise ServiceUnavailable(failure, hint=f"Full logs: {setup.rdir / 'logs'}.")
        names = wait_serving(setup, names, timeout=0.2, built=built)
        if not names:
            # The services serve: whose are they? Ours may not have exited yet after losing the lock.
            return ours and read_pid(setup.rdir) in (None, proc.pid)
    if ours:
        stop(setup)
    raise ServiceUnavailable(
        f"{', '.join(names)} did not become SERVING within {timeout:.0f} s",
        hint=f"See `ai-coding logs {names[0]}`.",
    )


def stop(setup: Setup) -> bool:
    """Stop the supervisor and everything it runs; False when nothing was running."""
    if supervisor_running(setup.rdir):
        # A supervisor that has just taken the lock writes its pid file a moment later.
        wait_until(lambda: read_pid(setup.rdir) is not None, 5)
    state = read_state(setup.rdir)
    pid = read_pid(setup.rdir) or (state.pid if state else None)
    if supervisor_running(setup.rdir) and pid:
        stragglers = descendants(pid)
        os.kill(pid, signal.SIGTERM)
        if not wait_until(lambda: not supervisor_running(setup.rdir), setup.supervisor.grace_seconds + 10):
            os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not pid_alive(pid), 5)
        for left in stragglers:  # only when the supervisor itself was killed
            signal_group(left, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(left, signal.SIGKILL)
        clear_stale_files(setup.rdir, ALL_SERVICES)
        return True
    # No supervisor: leftovers of one that was killed outright. Its services got SIGTERM when it
    # died (PDEATHSIG); what they started may still run in their process groups (pgid = service pid).
    if state:
        for svc in state.services.values():
            if not svc.pid or (pid_alive(svc.pid) and not is_service_process(svc.pid)):
                continue  # the pid now belongs to someone else
            signal_group(svc.pid, signal.SIGTERM)
            wait_until(lambda p=svc.pid: not group_alive(p), setup.supervisor.grace_seconds)
            signal_group(svc.pid, signal.SIGKILL)
    if (setup.rdir / LOCK_FILE).exists():
        clear_stale_files(setup.rdir, ALL_SERVICES)
    return False


def _sockets_listening(setup: Setup, names: list[str]) -> bool:
    """True when each of ``names`` has a Unix socket that accepts connections (a stale socket
    file left by a killed process refuses them)."""
    import socket

    for name in names:
        ep = setup.endpoints[name]
        if ep.scheme != "unix":
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            try:
                sock.connect(ep.path)
            except OSError:
                return False
    return True


def ensure_running(setup: Setup, names: list[str], *, quiet: bool = False,
                   serving: Callable[[str], bool] | None = None,
                   spawned: subprocess.Popen[bytes] | None = None) -> None:
    """Make sure ``names`` serve: start the supervisor when nothing runs, else wait a little.

    ``serving(name)``, when given, answers the first "does it serve?" in place of a Health Check on
    a channel of its own (``run`` asks on the channel its turn then uses); when it says no for any of
    them, everything below goes as without it.

    ``spawned`` is the supervisor :func:`begin` started for this call: it is waited for as
    :func:`start` waits for its own (a start-up failure is named the same way). A supervisor started
    here starts at once the services on demand this client will call (:func:`used_at_once`); one
    among ``names`` that waits for its first call is started by the health check that asks.

    Raises :class:`ServiceUnavailable` naming the service and how to start it. The services then stay
    up for as long as this client process lives (the idle shutdown waits for it to exit).
    """
    from services.kernel.activity import hold_for_process

    hold_for_process(setup.rdir)  # first: a supervisor stopping for idleness finishes, then we start anew
    if spawned is not None:
        start(setup, spawned=spawned)
    elif serving is not None and all(serving(name) for name in names):
        return
    if not wait_serving(setup, names, timeout=0.0):
        return
    local = [n for n in names if n in setup.supervisor.services]
    # Started by hand (`ai-coding serve NAME`) and still coming up: a supervisor of ours would
    # only collide with it on the socket, so give it the same grace instead. Not the services of a
    # supervisor that was killed: they got SIGTERM with it (PDEATHSIG) and are going; the new
    # supervisor stops what is left of them before it starts its own.
    if (local and not supervisor_running(setup.rdir)
            and not left_by_a_dead_supervisor(read_state(setup.rdir), local)
            and _sockets_listening(setup, local) and not wait_serving(setup, names, timeout=10.0)):
        return
    if local and not supervisor_running(setup.rdir):
        if not quiet:
            print("starting the services (ai-coding up) ...", file=sys.stderr)
        start(setup, start_now=used_at_once(setup, names))
    # A supervisor that runs may be restarting a service: give it a few seconds.
    missing = wait_serving(setup, names, timeout=10.0 if supervisor_running(setup.rdir) else 0.0)
    if missing:
        name = missing[0]
        how = ("it runs on another host: start it there with `ai-coding serve " + name + "`"
               if name not in setup.supervisor.services else
               f"see `ai-coding logs {name}`, or restart with `ai-coding down && ai-coding up`")
        raise ServiceUnavailable(
            f"the {name} service at {setup.endpoints[name]} is not answering",
            hint=f"({how}).",
        )
