"""Server bootstrap shared by every service.

A service describes itself as a :class:`ServiceDef` (its name, how to add its
servicers, what to do at shutdown). :func:`create_server` binds a real aio
server on an address and returns ``(server, bound_address)`` so tests can use
an ephemeral socket; :func:`run_service` is the process main: config, logging,
endpoint, SIGTERM handling (health NOT_SERVING, the service's own drain hook,
then ``server.stop(grace)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from services.kernel.config import Config, load_config
from services.kernel.endpoints import (
    AuthSettings,
    Endpoint,
    auth_settings,
    endpoint_for,
    ensure_runtime_dir,
    parse_endpoint,
    prepare_unix_socket,
    runtime_dir,
)
from services.kernel.errors import AiCodingError, EndpointError
from services.kernel.interceptors import AuthInterceptor, ContextInterceptor
from services.kernel.logs import setup_logging
from services.kernel.on_demand import (
    IDLE_ENV,
    IDLE_EXIT_CODE,
    TAKE_OVER_ENV,
    CallActivity,
    idle_due,
    idle_seconds_from,
    socket_identity,
)

log = logging.getLogger("ai_coding.server")

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
DEFAULT_GRACE_SECONDS = 5.0


@dataclass
class ServiceDef:
    """What a service contributes to the shared bootstrap."""

    name: str
    """Short name: loop, tools, memory or mcp_gateway."""
    proto_services: list[str]
    """Full proto service names, for health and reflection."""
    register: Callable[[grpc.aio.Server], None]
    """Adds the servicers to the server."""
    on_shutdown: Callable[[], Awaitable[None]] | None = None
    """Called after health turns NOT_SERVING and before the server stops
    (e.g. the loop sends in-flight turns their final event)."""
    on_start: Callable[[], Awaitable[None]] | None = None
    """Called once the server is listening (start background tasks here)."""
    self_test: Callable[[], Awaitable[str | None]] | None = None
    """Run once the server listens: a returned reason keeps health NOT_SERVING (and is logged), so
    a probe of grpc.health.v1 sees a service that cannot do its work (tools: bwrap cannot start)."""
    started_name: str = ""
    """A health name that turns SERVING only once on_start has finished (services/kernel/endpoints.py
    STARTED_SERVICE), beside the names that do so as soon as the server listens."""
    busy: Callable[[], bool] | None = None
    """True while the service holds something a stop for idleness would lose, calls aside (the
    gateway's MCP servers); asked only of a service started on demand (services/kernel/on_demand.py)."""
    extra: dict[str, object] = field(default_factory=dict)


@dataclass
class RunningServer:
    server: grpc.aio.Server
    address: str
    health: HealthServicer
    service: ServiceDef
    health_port: grpc.aio.Server | None = None
    """The plaintext health-only listener (``AI_CODING_HEALTH_PORT``), when one is bound."""
    activity: CallActivity = field(default_factory=CallActivity)
    """The service's calls in flight and the last one's end (health checks do not count)."""


def _server_options() -> list[tuple[str, int]]:
    return [
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.so_reuseport", 0),
    ]


def _bind(server: grpc.aio.Server, endpoint: Endpoint, take_over: str | None = None) -> str:
    if endpoint.scheme == "unix":
        if take_over and socket_identity(endpoint.path) == take_over:
            # The supervisor's own listener, which started us on demand: ours to replace. Connections
            # already queued there are closed by the supervisor once we listen, and reconnect here.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(endpoint.path)
        prepare_unix_socket(endpoint.path)
        Path(endpoint.path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        server.add_insecure_port(f"unix:{endpoint.path}")
        return str(endpoint)
    auth = endpoint.auth
    if not (auth.tls_cert and auth.tls_key and auth.token):
        raise EndpointError(
            f"{endpoint.service} would listen on {endpoint} without TLS and a token",
            hint="Set endpoints.auth.tls_cert, tls_key and token_file in the user config (TCP needs all three).",
            reason="tcp_requires_tls",
        )
    try:
        cert = Path(auth.tls_cert).expanduser().read_bytes()
        key = Path(auth.tls_key).expanduser().read_bytes()
    except OSError as exc:
        raise EndpointError(f"cannot read TLS files for {endpoint.service}: {exc}") from None
    creds = grpc.ssl_server_credentials([(key, cert)])
    try:
        port = server.add_secure_port(f"{endpoint.host}:{endpoint.port}", creds)
    except RuntimeError as exc:
        raise EndpointError(
            f"cannot listen on {endpoint}: {exc}", hint="Is the port in use?", reason="port_in_use"
        ) from None
    return f"tcp://{endpoint.host}:{port}"


async def create_server(endpoint: Endpoint | str, service: ServiceDef,
                        health: HealthServicer | None = None, take_over: str | None = None) -> RunningServer:
    """Build, bind and start a server for ``service``; returns it with its bound address.

    ``health``, when given, is the health servicer to answer with: one the caller may already have
    put into graceful shutdown (a SIGTERM during start-up), which then never turns SERVING.
    ``take_over``: the identity (services/kernel/on_demand.py) of a supervisor's listening socket at the endpoint's path, which
    this server replaces (a service started on demand); any other socket there is refused if served.
    """
    if isinstance(endpoint, str):
        endpoint = parse_endpoint(service.name, endpoint)
    context = ContextInterceptor(service.name)
    interceptors: list[grpc.aio.ServerInterceptor] = [context]
    if endpoint.scheme == "tcp":
        interceptors.insert(0, AuthInterceptor(endpoint.auth.token))
    server = grpc.aio.server(interceptors=interceptors, options=_server_options())
    service.register(server)
    health = health or HealthServicer()
    # Until the self-test has passed nothing is SERVING, the whole server ("") included.
    await health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    names = [*service.proto_services, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name]
    reflection.enable_server_reflection([*names, reflection.SERVICE_NAME], server)
    address = _bind(server, endpoint, take_over)
    await server.start()
    if endpoint.scheme == "unix":
        os.chmod(endpoint.path, 0o600)
    failed = await service.self_test() if service.self_test is not None else None
    status = health_pb2.HealthCheckResponse.NOT_SERVING if failed else health_pb2.HealthCheckResponse.SERVING
    if failed:
        log.error("%s self-test failed, health stays NOT_SERVING: %s", service.name, failed)
    if service.started_name:
        await health.set(service.started_name, health_pb2.HealthCheckResponse.NOT_SERVING)
    for name in ["", *service.proto_services]:
        await health.set(name, status)
    if service.on_start is not None:
        await service.on_start()
    if service.started_name:
        await health.set(service.started_name, status)
    return RunningServer(server, address, health, service, activity=context.activity)


def health_port_from(env: Mapping[str, str]) -> int | None:
    """``AI_CODING_HEALTH_PORT``: the port of a plaintext listener serving only grpc.health.v1."""
    raw = env.get("AI_CODING_HEALTH_PORT", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise EndpointError(f"AI_CODING_HEALTH_PORT is {raw!r}, not a port number",
                            hint="Set it to a free TCP port (1-65535), or unset it.", reason="bad_health_port")
    return int(raw)


async def start_health_port(running: RunningServer, port: int, host: str = "0.0.0.0") -> int:
    """Serve the same health statuses, and nothing else, in plaintext on ``host:port``.

    For an orchestrator's native gRPC probe (Kubernetes ``grpc:``), which cannot present the
    token or TLS: it learns SERVING / NOT_SERVING and nothing more (no reflection, no service).
    """
    server = grpc.aio.server(options=_server_options())
    health_pb2_grpc.add_HealthServicer_to_server(running.health, server)
    try:
        bound = int(server.add_insecure_port(f"{host}:{port}"))
    except RuntimeError as exc:
        raise EndpointError(f"cannot listen for health on {host}:{port}: {exc}", hint="Is the port in use?",
                            reason="port_in_use") from None
    await server.start()
    running.health_port = server
    return bound


async def shutdown(running: RunningServer, grace: float = DEFAULT_GRACE_SECONDS) -> None:
    """Graceful stop: NOT_SERVING, the service's drain hook, then stop(grace)."""
    await running.health.enter_graceful_shutdown()
    if running.service.on_shutdown is not None:
        try:
            await asyncio.wait_for(running.service.on_shutdown(), timeout=grace)
        except Exception:
            log.exception("shutdown hook of %s failed", running.service.name)
    await running.server.stop(grace)
    if running.health_port is not None:
        await running.health_port.stop(0)


async def stop_when_idle(running: RunningServer, idle_seconds: float, stop: asyncio.Event) -> None:
    """Set ``stop`` once the service has been idle for ``idle_seconds`` (see :func:`idle_due`)."""
    busy = running.service.busy or (lambda: False)
    period = min(max(idle_seconds / 4, 0.05), 10.0)
    while not stop.is_set():
        await asyncio.sleep(period)
        if idle_due(running.activity.quiet_for(), idle_seconds, busy()):
            log.info("%s: no call for %.0f s: stopping (started on demand: the next call starts it again)",
                     running.service.name, idle_seconds)
            stop.set()
            return


async def serve(service_factory: Callable[[Config], ServiceDef], name: str) -> int:
    """Run one service until SIGTERM/SIGINT, or until idle when started on demand. Returns the
    process exit code (:data:`IDLE_EXIT_CODE` after a stop for idleness)."""
    # What the supervisor tells a service it starts on demand; not for the processes it starts.
    idle_seconds = idle_seconds_from(os.environ)
    take_over = os.environ.pop(TAKE_OVER_ENV, None)
    os.environ.pop(IDLE_ENV, None)
    config = load_config(None)
    rdir = ensure_runtime_dir(runtime_dir(config))
    setup_logging(name, rdir / "logs")
    endpoint = endpoint_for(name, config)
    if endpoint.scheme == "tcp" and not endpoint.auth.token:
        endpoint = Endpoint(endpoint.service, "tcp", host=endpoint.host, port=endpoint.port, auth=auth_settings(config))
    service = service_factory(config)
    health_port = health_port_from(os.environ)
    # Before the server starts: a SIGTERM while on_start still runs (the loop builds its runtime
    # after SERVING) is a graceful stop once it is done, not the default kill. Health turns
    # NOT_SERVING at once, though: a client that asks meanwhile (its supervisor was killed, and
    # PDEATHSIG sent us this TERM) must not start a turn on a service that is about to go.
    stop = asyncio.Event()
    health = HealthServicer()
    loop = asyncio.get_running_loop()
    stopping: list[asyncio.Task[None]] = []

    def on_signal() -> None:
        stop.set()
        if not stopping:
            stopping.append(loop.create_task(health.enter_graceful_shutdown()))

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    running = await create_server(endpoint, service, health, take_over)
    # What start-up built (modules, descriptors, the config) lives as long as the process: moved to the
    # permanent generation, no later collection walks it (a full one walked ~80,000 objects in the loop,
    # now ~30,000 with 100 sessions open; see services/loop/session/reclaim.py). O(1): nothing is walked.
    gc.freeze()
    if health_port is not None:
        await start_health_port(running, health_port)
        log.info("%s health (plaintext, grpc.health.v1 only) on port %d", name, health_port)
    socket_id = _inode(endpoint.path) if endpoint.scheme == "unix" else None
    log.info("%s serving on %s (pid %d)", name, running.address, os.getpid())
    idle_watch = loop.create_task(stop_when_idle(running, idle_seconds, stop)) if idle_seconds else None
    await stop.wait()
    went_idle = idle_watch is not None and idle_watch.done() and not stopping
    if idle_watch is not None:
        idle_watch.cancel()
    log.info("%s shutting down", name)
    if went_idle:
        # No new connection from here on: a client that comes now finds the supervisor listening
        # again (or nothing for a moment, and retries), not a server that is going away.
        _unlink_own(endpoint, socket_id)
    await shutdown(running)
    _unlink_own(endpoint, socket_id)
    return IDLE_EXIT_CODE if went_idle else 0


def _unlink_own(endpoint: Endpoint, socket_id: tuple[int, int] | None) -> None:
    # Only our own socket: a successor that started while we drained has bound a new one there.
    if socket_id is not None and _inode(endpoint.path) == socket_id:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(endpoint.path)


def _inode(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def run_service(service_factory: Callable[[Config], ServiceDef], name: str) -> int:
    """Process entry point for ``ai-coding serve NAME``: readable errors, no traceback."""
    try:
        return asyncio.run(serve(service_factory, name))
    except AiCodingError as exc:
        print(f"ai-coding serve {name}: {exc}", flush=True)
        log.error("%s failed to start: %s", name, exc)
        return 2


__all__ = ["AuthSettings", "RunningServer", "ServiceDef", "create_server", "run_service", "serve", "shutdown"]
