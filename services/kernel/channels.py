"""Client side of an endpoint: channels with TLS and the bearer token, health checks."""

from __future__ import annotations

from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.kernel.endpoints import Endpoint
from services.kernel.interceptors import REQUEST_ID_KEY, request_id_var

_OPTIONS = [
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
]
FAST_RECONNECT: list[tuple[str, object]] = [
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
]
"""Channel arguments for a client that must find a local service again quickly: a loop restarted
under a client that stays open for hours, or memory or the gateway started on demand by this very
connection (services/kernel/on_demand.py). gRPC's default backoff starts at 1 s and grows to 120 s,
and a call made meanwhile waited that long; reconnecting over a Unix socket costs next to nothing."""


class _Metadata(grpc.AuthMetadataPlugin):  # type: ignore[misc]
    def __init__(self, token: str) -> None:
        self._token = token

    def __call__(self, context: grpc.AuthMetadataContext, callback: grpc.AuthMetadataPluginCallback) -> None:
        callback((("authorization", f"Bearer {self._token}"),), None)


def aio_channel(endpoint: Endpoint, options: list[tuple[str, object]] | None = None) -> grpc.aio.Channel:
    """An aio channel to ``endpoint`` (TLS + token for TCP); ``options`` add channel arguments."""
    extra = list(options or [])
    if endpoint.scheme == "unix":
        return grpc.aio.insecure_channel(endpoint.grpc_target, options=[*_OPTIONS, *extra])
    return grpc.aio.secure_channel(
        endpoint.grpc_target, _tcp_credentials(endpoint), options=[*_tcp_options(endpoint), *extra]
    )


def sync_channel(endpoint: Endpoint) -> grpc.Channel:
    """A blocking channel to ``endpoint`` (used by the CLI and tests)."""
    if endpoint.scheme == "unix":
        return grpc.insecure_channel(endpoint.grpc_target, options=_OPTIONS)
    return grpc.secure_channel(endpoint.grpc_target, _tcp_credentials(endpoint), options=_tcp_options(endpoint))


def _tcp_options(endpoint: Endpoint) -> list[tuple[str, object]]:
    opts: list[tuple[str, object]] = list(_OPTIONS)
    if endpoint.auth.server_name:
        opts.append(("grpc.ssl_target_name_override", endpoint.auth.server_name))
    return opts


def _tcp_credentials(endpoint: Endpoint) -> grpc.ChannelCredentials:
    ca = Path(endpoint.auth.tls_ca).expanduser().read_bytes() if endpoint.auth.tls_ca else None
    creds = grpc.ssl_channel_credentials(root_certificates=ca)
    if endpoint.auth.token:
        call = grpc.metadata_call_credentials(_Metadata(endpoint.auth.token))
        creds = grpc.composite_channel_credentials(creds, call)
    return creds


def call_metadata() -> tuple[tuple[str, str], ...]:
    """Metadata to propagate the current request id to a downstream service."""
    rid = request_id_var.get()
    return ((REQUEST_ID_KEY, rid),) if rid else ()


def check_health(endpoint: Endpoint, service: str = "", timeout: float = 1.0) -> str:
    """Blocking grpc.health.v1 Check: "SERVING", "NOT_SERVING", ... or "UNREACHABLE"."""
    channel = sync_channel(endpoint)
    try:
        stub = health_pb2_grpc.HealthStub(channel)
        resp = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))
    except grpc.RpcError as err:
        if err.code() == grpc.StatusCode.UNAUTHENTICATED:
            return "UNAUTHENTICATED"
        return "UNREACHABLE"
    finally:
        channel.close()
