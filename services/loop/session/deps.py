"""What a loop service gives its sessions: its ports and config sections (``LoopDeps``), and how a
client opened a session (``SessionOptions``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.kernel.netpolicy import NetConfig
from services.loop.compaction.settings import CompactionSettings
from services.loop.core.feature import FeatureFactory
from services.loop.core.ports import McpClient, MemoryClient, ModelClient, ToolRunner
from services.loop.hooks.config import HookSettings
from services.loop.plans.settings import PlansConfig
from services.loop.policy.settings import DEFAULT_WINDOW, LoopSettings
from services.loop.session.features import FEATURES
from services.loop.tracing.writer import SpanExport

ConfigRow = tuple[str, Any, str]
"""``(dotted key, value, layer)`` of one configured leaf, secrets masked (kernel config report)."""


@dataclass
class SessionOptions:
    """How a session was opened."""

    auto_approve: bool = False
    interactive: bool = False
    cwd: str = ""
    """Where the user runs the client (inside the workspace): instructions are read down to here."""
    skill_dirs: list[str] = field(default_factory=list)
    """``--skills DIR``: skill directories replacing the defaults."""
    client_env: dict[str, str] | None = None
    """The client's model/key variables (services.kernel.invocation); None = the service's environment."""


@dataclass
class LoopDeps:
    """The loop's ports, built once per service."""

    model_for: Callable[[str], ModelClient]
    tools: ToolRunner
    settings: LoopSettings = field(default_factory=LoopSettings)
    memory: MemoryClient | None = None
    mcp: McpClient | None = None
    secret_env_names: list[str] = field(default_factory=list)
    fsync: bool = False
    traces: bool = True
    source_of: Callable[[str], str] = lambda dotted: "default"
    """Which config layer set a dotted key (for /config)."""
    config_rows: tuple[ConfigRow, ...] = ()
    """Every leaf of the merged configuration with its layer, secrets masked (what /config prints)."""
    model_names: tuple[str, ...] = ()
    """The configured model entries, in file order (what /model lists)."""
    net: NetConfig = field(default_factory=NetConfig)
    """The ``net`` section from the user's own layer (webfetch's allow-list and pinned hosts)."""
    plans: PlansConfig = field(default_factory=PlansConfig)
    """The ``plans`` section (the configured acceptance items)."""
    harvest: bool = False
    """Run the memory harvest after each turn (one extra model call, in the background)."""
    harvest_timeout_seconds: float = 60.0
    """Budget of one harvest (model call + reconcile)."""
    event_window: int = DEFAULT_WINDOW
    """Events kept per session for re-attaching clients."""
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    """The ``compaction`` section (thresholds and layers)."""
    span_export: SpanExport | None = None
    """Live OTLP export of finished turns (``tracing.otlp.endpoint``), shared by every session."""
    hooks: HookSettings = field(default_factory=HookSettings)
    """The ``hooks`` section (user layer only; off when empty)."""
    features: tuple[FeatureFactory, ...] = FEATURES
    """The session features every session composes, in order."""
