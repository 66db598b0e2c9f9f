"""The tool service's typed config (``tools:`` in the user config).

Sandbox keys and extra roots are execution keys: the kernel's config loader
takes them only from the user layer, and the tools process reads its config
with ``load_config(None)`` so a repository can never loosen them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SANDBOX_MODES = ("bwrap", "none")


@dataclass
class SandboxConfig:
    """``tools.sandbox``: how bash and jobs are isolated."""

    mode: str = "bwrap"
    """"bwrap" (default): every bash call and job in its own bubblewrap instance.
    "none": run on the host (explicit opt-out; each session start reports it as degraded)."""
    network: bool = False
    """Give sandboxed commands the network. Default false: no network namespace access."""
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
    idle_session_seconds: float = 6 * 3600.0
    """A session with no call and no running job for this long is forgotten (its file state too),
    so a loop that never calls CloseSession does not grow the service forever. Default 6 hours."""
