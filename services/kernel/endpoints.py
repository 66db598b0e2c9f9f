"""Where services listen and how to reach them.

Locally every service listens on a Unix socket ``<runtime>/<name>.sock`` in a
0700 runtime directory (``$AI_CODING_RUNTIME_DIR``, else
``$XDG_RUNTIME_DIR/ai-coding``, else ``/tmp/ai-coding-<uid>``). An endpoint
``tcp://host:port`` needs TLS plus a bearer token (see ``AuthSettings``).

Config (user layer only)::

    endpoints:
      runtime_dir: /run/user/1000/ai-coding
      tools: tcp://tools-host:7301
      auth: {token_file: ~/.config/ai-coding/token, tls_cert: ..., tls_key: ..., tls_ca: ...}

Environment overrides: ``AI_CODING_<SERVICE>_ENDPOINT`` (e.g. ``AI_CODING_TOOLS_ENDPOINT``).
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path

from services.kernel.config import Config
from services.kernel.errors import EndpointError
from services.kernel.records import record

SERVICES: tuple[str, ...] = ("loop", "tools", "memory", "mcp_gateway")

# Full proto service names, for health checks and reflection.
PROTO_SERVICE: dict[str, str] = {
    "loop": "ai_coding.v1.AgentLoop",
    "tools": "ai_coding.v1.ToolRuntime",
    "memory": "ai_coding.v1.Memory",
    "mcp_gateway": "ai_coding.v1.McpGateway",
}

STARTED_SERVICE: dict[str, str] = {"loop": "ai_coding.v1.AgentLoop.started"}
"""A health name that turns SERVING only once the service's start-up work is done: the loop answers
SERVING as soon as it listens and builds its session runtime after (calls meanwhile wait for it);
``ai-coding up`` waits for this name, so the turn that follows it does not."""


@record
class AuthSettings:
    """TLS and token settings for TCP endpoints."""

    token: str = ""
    """Bearer token every TCP call must carry (``authorization: Bearer <token>``)."""
    tls_cert: str = ""
    """PEM certificate the server presents."""
    tls_key: str = ""
    """PEM private key of ``tls_cert``."""
    tls_ca: str = ""
    """PEM CA bundle a client uses to verify the server (default: system roots)."""
    server_name: str = ""
    """TLS name override for clients (when the cert's name differs from the host)."""


@record
class Endpoint:
    """One service address: ``unix:/abs/path`` or ``tcp://host:port``."""

    service: str
    scheme: str  # "unix" or "tcp"
    path: str = ""
    host: str = ""
    port: int = 0
    auth: AuthSettings = field(default_factory=AuthSettings)

    @property
    def grpc_target(self) -> str:
        return f"unix:{self.path}" if self.scheme == "unix" else f"{self.host}:{self.port}"

    def __str__(self) -> str:
        return f"unix://{self.path}" if self.scheme == "unix" else f"tcp://{self.host}:{self.port}"


def runtime_dir(config: Config | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The runtime directory (not created or checked here)."""
    environ = os.environ if env is None else env
    if environ.get("AI_CODING_RUNTIME_DIR"):
        return Path(environ["AI_CODING_RUNTIME_DIR"]).expanduser()
    configured = config.get("endpoints.runtime_dir") if config else None
    if configured:
        return Path(str(configured)).expanduser()
    if environ.get("XDG_RUNTIME_DIR"):
        return Path(environ["XDG_RUNTIME_DIR"]) / "ai-coding"
    return Path(f"/tmp/ai-coding-{os.getuid()}")


def ensure_runtime_dir(path: Path) -> Path:
    """Create ``path`` 0700, or check an existing one is ours and private."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError as exc:
        raise EndpointError(
            f"cannot create runtime dir {path}: {exc.strerror}",
            hint="Set AI_CODING_RUNTIME_DIR to a directory you own.",
        ) from None
    if st.st_uid != os.getuid():
        raise EndpointError(
            f"runtime dir {path} is owned by uid {st.st_uid}, not you (uid {os.getuid()})",
            hint="Remove it or set AI_CODING_RUNTIME_DIR to a directory you own.",
        )
    # Permission bits only: a directory made inside a setgid one (a Kubernetes volume with an
    # fsGroup) inherits the setgid bit, which lets no one else in.
    mode = stat.S_IMODE(st.st_mode) & 0o777
    if mode != 0o700:
        raise EndpointError(
            f"runtime dir {path} has mode {mode:04o}; it must be 0700 so no one else can reach the services",
            hint=f"Run: chmod 700 {path}",
        )
    (path / "logs").mkdir(mode=0o700, exist_ok=True)
    return path


def _read_secret(value: str) -> str:
    p = Path(value).expanduser()
    try:
        return p.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise EndpointError(f"cannot read {p}: {exc.strerror}", hint="Fix endpoints.auth in the user config.") from None


def auth_settings(config: Config | None, env: Mapping[str, str] | None = None) -> AuthSettings:
    """Auth settings from ``endpoints.auth`` and ``AI_CODING_TOKEN``."""
    environ = os.environ if env is None else env
    raw = (config.get("endpoints.auth") if config else None) or {}
    token = environ.get("AI_CODING_TOKEN", "") or str(raw.get("token", "") or "")
    if not token and raw.get("token_file"):
        token = _read_secret(str(raw["token_file"]))
    return AuthSettings(
        token=token,
        tls_cert=str(raw.get("tls_cert", "") or ""),
        tls_key=str(raw.get("tls_key", "") or ""),
        tls_ca=str(raw.get("tls_ca", "") or ""),
        server_name=str(raw.get("server_name", "") or ""),
    )


def parse_endpoint(service: str, text: str, auth: AuthSettings | None = None) -> Endpoint:
    """Parse ``unix:///path``, ``unix:/path`` or ``tcp://host:port``."""
    text = text.strip()
    if text.startswith("unix://"):
        path = text[len("unix://") :]
    elif text.startswith("unix:"):
        path = text[len("unix:") :]
    elif text.startswith("tcp://"):
        hostport = text[len("tcp://") :]
        host, sep, port = hostport.rpartition(":")
        if not sep or not port.isdigit():
            raise EndpointError(f"endpoint {text!r} for {service} needs a port", hint="Write tcp://host:port.")
        return Endpoint(service, "tcp", host=host.strip("[]"), port=int(port), auth=auth or AuthSettings())
    else:
        raise EndpointError(
            f"endpoint {text!r} for {service} is neither unix:// nor tcp://",
            hint="Write unix:///abs/path.sock or tcp://host:port.",
        )
    if not path.startswith("/"):
        raise EndpointError(f"unix endpoint {text!r} for {service} must be an absolute path")
    return Endpoint(service, "unix", path=path, auth=auth or AuthSettings())


def endpoint_for(service: str, config: Config | None = None, env: Mapping[str, str] | None = None) -> Endpoint:
    """Resolve one service's endpoint from env, config, or the runtime-dir default."""
    if service not in SERVICES:
        raise EndpointError(
            f"unknown service {service!r}",
            hint=f"Use one of: {', '.join(SERVICES)}.",
            reason="unknown_service",
        )
    environ = os.environ if env is None else env
    auth = auth_settings(config, environ)
    override = environ.get(f"AI_CODING_{service.upper()}_ENDPOINT") or (
        config.get(f"endpoints.{service}") if config else None
    )
    if override:
        return parse_endpoint(service, str(override), auth)
    return Endpoint(service, "unix", path=str(runtime_dir(config, environ) / f"{service}.sock"), auth=auth)


def socket_in_use(path: str) -> bool:
    """True unless the Unix socket ``path`` is provably stale.

    Only a refused connection or a missing file means no one serves it; a
    timeout (a live listener with a full backlog) or any other error counts as
    in use, so a busy server's socket is never deleted.
    """
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(0.5)
    try:
        s.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except OSError:
        return True
    finally:
        s.close()
    return True


def prepare_unix_socket(path: str) -> None:
    """Refuse a socket another process serves; remove a stale one."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        return
    if socket_in_use(path):
        raise EndpointError(
            f"socket {path} is already in use by another process",
            hint="Run `ai-coding down` (or stop that process), or set another AI_CODING_RUNTIME_DIR.",
            reason="socket_in_use",
        )
    p.unlink()
