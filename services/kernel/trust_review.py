"""What ``ai-coding trust`` shows and approves: every execution item of a workspace that is new or
changed since the user's decision (its config layer and its ``.mcp.json``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.kernel.config import load_config
from services.kernel.trust import Pending, TrustStore, mcp_json_items


def review(workspace: Path, env: Mapping[str, str] | None = None, **load: Any) -> list[Pending]:
    """The workspace's pending items (``load``: more arguments of ``load_config``)."""
    config = load_config(workspace, env=env, **load)
    pending = list(config.trust.pending) if config.trust is not None else []
    store = TrustStore.load(env)
    return pending + [p for p in (store.check(workspace, item) for item in mcp_json_items(workspace)) if p is not None]


def approve(workspace: Path, pending: list[Pending], env: Mapping[str, str] | None = None) -> None:
    """Record the user's approval of ``pending`` (and of the workspace, even when nothing is listed)."""
    store = TrustStore.load(env)
    store.approve(workspace, [p.item for p in pending])
    store.save()
