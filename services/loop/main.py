"""``ai-coding serve loop``: build the AgentLoop service from the config."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_coding.v1 import loop_pb2_grpc

from services.kernel.config import Config, effective_config_report, layer_stamp, load_config, restart_notes
from services.kernel.endpoints import STARTED_SERVICE, endpoint_for, runtime_dir
from services.kernel.errors import ConfigError
from services.kernel.invocation import effective_environment
from services.kernel.server import ServiceDef
from services.loop.compaction.settings import compaction_settings
from services.loop.deferred import DeferredServicer
from services.loop.hooks.config import parse_hooks
from services.loop.loop_config import LoopConfig as LoopConfig
from services.loop.plans.settings import PlansConfig
from services.loop.policy.settings import loop_settings

if TYPE_CHECKING:
    from services.loop.core.ports import ModelClient
    from services.loop.session.deps import LoopDeps
    from services.loop.session.open_sessions import LoopRuntime

PROTO_SERVICE = "ai_coding.v1.AgentLoop"
# What the session runtime imports, loaded right after SERVING (see build). The model client
# (httpx2) is among them, so the first turn does not wait for it either.
RUNTIME_MODULES = ("services.loop.servicer", "services.loop.session.open_sessions", "services.loop.adapters.tools",
                   "services.loop.adapters.memory", "services.loop.adapters.mcp", "services.loop.tools.webgate",
                   "services.loop.model.client")

MAX_WORKSPACE_CONFIGS = 64
"""Workspace configs (each a LoopDeps, built from its layered config files) kept between OpenSessions."""


@dataclass
class SessionsConfig:
    """Config section ``sessions``."""

    fsync: bool = False
    """fsync every session save: survives power loss, not only a killed process (costs ~ms per step)."""


class ModelFactory:
    """Model clients by config name, created once each."""

    def __init__(self, config: Config, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.env = env
        """Where ${VAR} keys are read (the client's variables over the service's); None = os.environ."""
        self._clients: dict[str, ModelClient] = {}

    def __call__(self, name: str) -> ModelClient:
        from services.loop.model.client import OpenAIModelClient
        from services.loop.model.prices import with_shipped_prices
        from services.loop.model.settings import resolve_model

        settings = with_shipped_prices(resolve_model(self.config, name or None, env=self.env))
        if settings.name not in self._clients:
            self._clients[settings.name] = OpenAIModelClient(settings)
        return self._clients[settings.name]


def deps_fields(config: Config, env: Mapping[str, str] | None = None) -> tuple[LoopConfig, dict[str, Any]]:
    """The ``loop`` section and the LoopDeps fields read from the config (not the service clients,
    the span exporter nor ``net``); raises ConfigError on a bad section (hooks). Imports no session
    module: :func:`build` runs it before the service reports SERVING, so a bad config still stops
    the start, and builds the rest right after."""
    from services.loop.model.settings import check_models, model_names, secret_env_names

    loop = config.section(LoopConfig, "loop")  # env: the session's environment (ModelFactory reads keys there)
    check_models(config)
    # The exact key's layer: a project that sets only hooks.plugin_dir did not set the user's events.
    hooks, hook_warnings = parse_hooks(config.get("hooks"), lambda key: config.sources.get(key, "default"))
    config.warnings += [w for w in hook_warnings if w not in config.warnings]
    return loop, {
        "model_for": ModelFactory(config, env),
        "settings": loop_settings(config),
        "secret_env_names": secret_env_names(config),
        "fsync": config.section(SessionsConfig, "sessions").fsync,
        "traces": loop.traces,
        "source_of": config.source_of,
        "config_rows": tuple(effective_config_report(config)),
        "model_names": tuple(model_names(config)),
        "plans": config.section(PlansConfig, "plans"),
        "harvest": loop.harvest and loop.memory,
        "harvest_timeout_seconds": loop.harvest_timeout_seconds,
        "event_window": max(1, loop.event_window),
        "compaction": compaction_settings(config),
        "hooks": hooks,
    }


def build_deps(config: Config, shared: LoopDeps | None = None, env: Mapping[str, str] | None = None) -> LoopDeps:
    """The loop's ports wired to the configured services and model.

    ``shared`` supplies the service clients (tools, memory, MCP) already built at start: their
    endpoints are execution keys of the user layer, fixed for the life of the process.
    """
    loop, fields = deps_fields(config, env)
    if shared is None:
        return shared_deps(config, loop, fields, service_endpoints(config), live_exporter(config))
    from services.loop.session.deps import LoopDeps
    from services.loop.tools.webgate import user_net

    return LoopDeps(
        **fields, tools=shared.tools, memory=shared.memory if loop.memory else None,
        mcp=shared.mcp if loop.mcp else None, span_export=shared.span_export,
        net=user_net(config.data, config.source_of), features=shared.features,
    )


def service_endpoints(config: Config) -> dict[str, Any]:
    """Where the tools, memory and MCP gateway services listen (raises EndpointError on a bad one)."""
    return {name: endpoint_for(name, config) for name in ("tools", "memory", "mcp_gateway")}


def shared_deps(config: Config, loop: LoopConfig, fields: dict[str, Any], endpoints: dict[str, Any],
                span_export: Any) -> LoopDeps:
    """The process's LoopDeps: ``fields`` (see :func:`deps_fields`) with the service clients."""
    from services.loop.adapters.mcp import GrpcMcpClient
    from services.loop.adapters.memory import GrpcMemoryClient
    from services.loop.adapters.tools import GrpcToolRunner
    from services.loop.session.deps import LoopDeps
    from services.loop.tools.webgate import user_net
    from services.mcp_gateway.sidecar_watch import DeclaredServers

    return LoopDeps(
        **fields, tools=GrpcToolRunner(endpoints["tools"]),
        memory=GrpcMemoryClient(endpoints["memory"]) if loop.memory else None,
        mcp=GrpcMcpClient(endpoints["mcp_gateway"], DeclaredServers()) if loop.mcp else None,
        span_export=span_export, net=user_net(config.data, config.source_of),
    )


def live_exporter(config: Config) -> Any:
    """The OTLP/HTTP span exporter when ``tracing.otlp.endpoint`` is set (imports the SDK only then)."""
    from services.loop.tracing.live import LiveExporter, OtlpConfig

    otlp = config.section(OtlpConfig, "tracing.otlp")
    if not otlp.endpoint.strip():
        return None
    try:
        return LiveExporter(otlp)
    except Exception as exc:  # the loop starts without live export, and says so; never a crash loop
        config.warnings.append(f"config section `tracing.otlp` could not start live export "
                               f"({type(exc).__name__}: {exc}); traces are only written to disk")
        return None


class WorkspaceDeps:
    """Each workspace's ``LoopDeps`` from the layered config: the user layer (re-read from its
    file when the service's config came from one) with that workspace's project layer on top,
    trust filter applied. Rebuilt only when a config file's ``stat`` changed since it was read,
    so a model added to the user file, or a project's new limits, apply from the next OpenSession.
    """

    def __init__(self, base: Config, shared: LoopDeps, process_wide: list[str] | None = None) -> None:
        self.base = base
        self.shared = shared
        self.process_wide = process_wide or []
        # Most recently used last; the oldest goes past MAX_WORKSPACE_CONFIGS (a service that saw
        # thousands of workspaces or client environments kept a LoopDeps for each).
        self._cache: OrderedDict[tuple[str, tuple[tuple[str, str], ...] | None],
                                 tuple[tuple[Any, ...], LoopDeps, list[str]]] = OrderedDict()
        self._noted: set[str] = set()

    def __call__(self, workspace: str, client_env: Mapping[str, str] | None = None) -> tuple[LoopDeps, list[str]]:
        """The deps for ``workspace`` in the client's environment (``client_env``, see
        services.kernel.invocation) and the config's warnings (dropped keys, skipped files, and the
        settings that changed since the service started but apply only once it restarts)."""
        path = Path(workspace)
        stamp = layer_stamp(path, self.base.user_path)  # before reading: a change during the read reloads
        key = (workspace, tuple(sorted(client_env.items())) if client_env is not None else None)
        hit = self._cache.get(key)
        if hit is not None and hit[0] == stamp:
            self._cache.move_to_end(key)
            return hit[1], list(hit[2])
        env = effective_environment(os.environ, client_env)
        config = self._load(path, env)
        try:
            deps = build_deps(config, shared=self.shared, env=env)
            warnings = list(config.warnings)  # after build_deps: reading the sections warns too
            warnings += restart_notes(self.base, config)
        except ConfigError as err:
            project = [str(f) for f in config.files if f != config.user_path]
            if not project:
                raise
            # A mapping-shaped file of another tool (say Helm values with an `ai:` list) must not
            # stop every session: run on the user layer and say which file was set aside.
            user_only = self._load(None, env)
            deps = build_deps(user_only, shared=self.shared, env=env)
            warnings = [*user_only.warnings, f"ignored project config {', '.join(project)}: {err}"]
        self._cache[key] = (stamp, deps, warnings)
        self._cache.move_to_end(key)
        while len(self._cache) > MAX_WORKSPACE_CONFIGS:
            self._cache.popitem(last=False)
        notes = [n for n in config.notes if n not in self._noted]  # another tool's file: said once
        self._noted.update(notes)
        return deps, [*warnings, *notes, *(w for w in self.process_wide if w not in warnings)]

    def _load(self, workspace: Path | None, env: Mapping[str, str]) -> Config:
        if self.base.user_path is not None:
            return load_config(workspace, user_path=self.base.user_path, env=env)
        config = load_config(workspace, user_data=self.base.data)
        config.sources = {**self.base.sources, **config.sources}
        return config


def build(config: Config) -> ServiceDef:
    """The loop service definition (``extra["runtime"]`` is the LoopRuntime once start-up finished).

    What the config decides is read here, so a bad config stops the start before SERVING. The
    session runtime (its ~150 modules: features, turn pipeline, adapters) and the model client are
    imported right after SERVING, in on_start, and the runtime built; a call arriving meanwhile
    waits for it (DeferredServicer). The first turn needs all of it: it waits for nothing once
    OpenSession has answered.
    """
    loop, fields = deps_fields(config)
    endpoints = service_endpoints(config)
    span_export = live_exporter(config)
    # Read once per process (the exporter is shared): every session is told, not only the first.
    process_wide = [w for w in config.warnings if "tracing.otlp" in w]
    servicer = DeferredServicer()
    extra: dict[str, object] = {}
    watch: list[asyncio.Task[None]] = []

    def register(server: object) -> None:
        loop_pb2_grpc.add_AgentLoopServicer_to_server(servicer, server)

    async def on_start() -> None:
        # The imports (most of the work) in a thread; the objects on the event loop, where the
        # service clients' gRPC channels belong.
        await asyncio.to_thread(load_runtime_modules)
        from services.loop.servicer import AgentLoopServicer
        from services.loop.session.open_sessions import LoopRuntime

        shared = shared_deps(config, loop, fields, endpoints, span_export)
        runtime = LoopRuntime(shared, WorkspaceDeps(config, shared, process_wide))
        extra["runtime"] = runtime
        servicer.ready(AgentLoopServicer(runtime))
        watch.append(asyncio.create_task(hold_while_busy(runtime, runtime_dir(config))))
        watch.append(asyncio.create_task(runtime.sweep()))

    async def on_shutdown() -> None:
        for task in watch:
            task.cancel()
        runtime = extra.get("runtime")
        if runtime is not None:
            await runtime.shutdown()  # type: ignore[attr-defined]
        if span_export is not None:  # send what is queued, within its own timeout
            await asyncio.to_thread(span_export.shutdown)

    return ServiceDef(name="loop", proto_services=[PROTO_SERVICE], register=register, on_start=on_start,
                      on_shutdown=on_shutdown, started_name=STARTED_SERVICE["loop"], extra=extra)


def load_runtime_modules() -> None:
    """Import :data:`RUNTIME_MODULES` and build the model connections' TLS context (blocking)."""
    for name in RUNTIME_MODULES:
        importlib.import_module(name)
    from services.loop.model.transport import shared_tls_context

    shared_tls_context()


def runtime_busy(runtime: LoopRuntime) -> bool:
    """A turn runs or is queued, a client follows a session, or a background child works."""
    return any(s.busy or not s.quiet for s in runtime.sessions.values())  # quiet: no feature works (a child)


async def hold_while_busy(runtime: LoopRuntime, rdir: Path, every: float = 0.25) -> None:
    """Keep the supervisor's idle shutdown away while :func:`runtime_busy` (see services.kernel.activity).

    Polled often: a turn whose client vanished right after starting it is held only from the next
    poll, and the supervisor may find nobody holding in between (at 2 s, a 2 s idle time stopped a
    running turn's services). A poll that changes nothing costs no system call."""
    from services.kernel.activity import ActivityHold

    hold = ActivityHold(rdir)
    try:
        while True:
            with contextlib.suppress(OSError):
                hold.set(runtime_busy(runtime))
            await asyncio.sleep(every)
    finally:
        hold.release()
