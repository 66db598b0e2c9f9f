"""What the feature needs of the tools service's checkpoint store (grpc_port.py implements it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class FileDelta:
    """One path changed between two checkpoints, with +/- line counts (none for binary files)."""

    path: str
    kind: str
    added: int = 0
    removed: int = 0
    binary: bool = False


@dataclass(frozen=True)
class Restored:
    """A restore's report: the redo checkpoint, the user's changes kept, what could not come back."""

    redo_checkpoint_id: str
    changed_since: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    not_restorable: list[str] = field(default_factory=list)
    written: int = 0
    removed: int = 0


class CheckpointPort(Protocol):
    async def create(self, session_id: str, label: str) -> str:
        """A checkpoint of the workspace now; its id."""
        ...

    async def diff(self, session_id: str, from_id: str, to_id: str = "") -> list[FileDelta]: ...

    async def restore(self, session_id: str, checkpoint_id: str, baseline_id: str, overwrite_changed: bool,
                      dry_run: bool = False) -> Restored: ...

    async def prune(self, session_id: str) -> int: ...

    async def prune_orphans(self, session_id: str, live_sessions: list[str]) -> int:
        """Drop the checkpoints of the workspace's sessions not in ``live_sessions`` (deleted ones)."""
        ...
