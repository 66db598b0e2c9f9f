"""Tests stand for the user here: approve a workspace's execution items as `ai-coding trust --yes` does."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.kernel.trust_review import approve, review


def trust_workspace(workspace: Path, env: Mapping[str, str] | None = None, **load: Any) -> int:
    """Approve everything pending for ``workspace`` (``env`` names the data dir); how many items."""
    pending = review(workspace, env, **load)
    approve(workspace, pending, env)
    return len(pending)
