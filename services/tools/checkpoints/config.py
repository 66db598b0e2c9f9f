"""``tools.checkpoints``: the typed config of the checkpoint store."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CheckpointsConfig:
    """``tools.checkpoints``: the snapshots taken before every step that can change the workspace."""

    enabled: bool = True
    """Take a checkpoint before every write, edit, bash and job_start call (rewind and undo need it)."""
    max_store_mb: int = 2048
    """Cap of one workspace's store; over it the oldest checkpoints go first. 0 = no cap."""
    max_age_days: float = 30.0
    """Checkpoints older than this many days are dropped (when the next one is taken). 0 = kept
    until the size cap or their session's pruning drops them."""
    max_files: int = 200_000
    """A workspace with more files than this is not checkpointed (each step would walk them all
    once after a restart); every changing call's result then says so."""
    max_file_mb: int = 20
    """Files larger than this are not copied into checkpoints (a rewind names them)."""
    exclude: list[str] = field(default_factory=lambda: [".git", ".ai-coding", "node_modules", ".venv",
                                                        "__pycache__", ".mypy_cache", ".pytest_cache"])
    """Names (files or folders, at any depth) checkpoints leave out: the user's git data and the
    agent's state (read-only inside the sandbox) and rebuildable caches."""
