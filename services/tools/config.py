"""The tool service's typed config (``tools:`` in the user config).

Sandbox keys and extra roots are execution keys: the kernel's config loader
takes them only from the user layer, and the tools process reads its config
with ``load_config(None)`` so a repository can never loosen them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from services.tools.checkpoints.config import CheckpointsConfig

SANDBOX_MODES = ("bwrap", "none")
NETWORK_MODES = ("off", "proxy", "host")


def network_mode(value: object) -> str:
    """``tools.sandbox.network`` as one of NETWORK_MODES (false/true are off/host, as before);
    ValueError for anything else."""
    if value is False or value is None:
        return "off"
    if value is True:
        return "host"
    if isinstance(value, str) and value.lower() in NETWORK_MODES:
        return value.lower()
    raise ValueError(f"config key `tools.sandbox.network` is {value!r}; use one of: {', '.join(NETWORK_MODES)}")


@dataclass
class SandboxConfig:
    """``tools.sandbox``: how bash and jobs are isolated."""

    mode: str = "bwrap"
    """"bwrap" (default): every bash call and job in its own bubblewrap instance.
    "none": run on the host (explicit opt-out; each session start reports it as degraded)."""
    network: bool | str = False
    """"off" (default, also false): commands have no network at all. "proxy": no network
    interface but loopback; the only way out is the tools service's egress proxy, which lets
    through ``allow_domains`` (minus ``deny_domains``) over HTTP and HTTPS (CONNECT), with
    HTTP_PROXY/HTTPS_PROXY/NO_PROXY set. "host" (also true): the host's whole network."""
    allow_domains: list[str] = field(default_factory=list)
    """``network: proxy``: hosts commands may reach: names, ``*.name`` wildcards, ``name:port``
    (no port = 80 and 443), or presets: pypi, npm, crates, github, debian, go."""
    deny_domains: list[str] = field(default_factory=list)
    """``network: proxy``: hosts refused even when ``allow_domains`` matches them (deny wins)."""
    credentials: list[dict[str, Any]] = field(default_factory=list)
    """``network: proxy``: headers the proxy adds on the way out to a host, over HTTP and HTTPS
    (for HTTPS it terminates that host's TLS with a per-installation CA trusted only inside the
    sandbox): ``[{host: index.corp, headers: {Authorization: "Bearer ${INDEX_TOKEN}"}}]``, with an
    optional ``ca_file`` for a host whose certificate a private CA signs; ``${VAR}`` comes from
    the services' environment, so the command never sees it."""
    bwrap: str = "bwrap"
    """The bubblewrap program (a name looked up on PATH, or an absolute path)."""
    read_only_paths: list[str] = field(default_factory=list)
    """Host directories commands may read besides the system dirs (/usr, /etc, /opt, /var, ...), the
    workspace and its extra roots: every other top-level directory (/srv, /home, /mnt, ...) is empty
    inside the sandbox. One containing your home, the runtime, config or data dir is refused."""
    self_test: bool = False
    """Start a bwrap instance when the service starts; if it cannot, health stays NOT_SERVING (the
    Kubernetes pods turn this on, so a pod whose sandbox cannot start is not Ready)."""
    env_allow: list[str] = field(default_factory=list)
    """Extra environment variable names passed into commands (besides PATH, LANG, TERM...).
    Names that look like secrets (KEY, TOKEN, SECRET, PASSWORD) are never passed."""


@dataclass
class ToolsConfig:
    """``tools``: the tool service's settings."""

    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    """The sandbox for bash and jobs."""
    extra_workspace_roots: list[str] = field(default_factory=list)
    """Directories besides the workspace that file tools and commands may use (read-write).
    Only honoured from the user's own config."""
    checkpoints: CheckpointsConfig = field(default_factory=CheckpointsConfig)
    """Snapshots of the workspace before every step that can change it (docs/checkpoints.md)."""
    idle_session_seconds: float = 6 * 3600.0
    """A session with no call and no running job for this long is forgotten (its file state too),
    so a loop that never calls CloseSession does not grow the service forever. Default 6 hours."""
