"""The tools service's checkpoint stores, one per workspace root, under the data dir."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

from services.tools.checkpoints.config import CheckpointsConfig
from services.tools.checkpoints.errors import CheckpointsOff
from services.tools.checkpoints.snapshot import Rules
from services.tools.checkpoints.store import CheckpointStore, workspace_key

log = logging.getLogger("ai_coding.tools.checkpoints")

CHANGING_TOOLS = frozenset({"write", "edit", "bash", "job_start"})
"""The tools that can change the workspace: a checkpoint is taken before each call of one."""


class CheckpointManager:
    """Opens (and after a kill, first repairs) the store of each workspace root."""

    def __init__(self, config: CheckpointsConfig, base: Path) -> None:
        self.config, self.base = config, base
        self.stores: dict[Path, CheckpointStore] = {}
        self.refused: dict[Path, CheckpointsOff] = {}
        self.lock = threading.Lock()

    def rules(self) -> Rules:
        return Rules(frozenset(self.config.exclude), self.config.max_file_mb * 1024 * 1024, self.config.max_files)

    def store(self, root: Path) -> CheckpointStore:
        if not self.config.enabled:
            raise CheckpointsOff("checkpoints are off (tools.checkpoints.enabled: false)",
                                 hint="Turn them on in the tools service's user config and restart it.")
        refused = self.refused.get(root)
        if refused is not None:
            raise refused
        return self._open(root)

    def refuse(self, root: Path, why: CheckpointsOff) -> None:
        """No more checkpoints of ``root`` in this process (it is too big): each call says why, at once."""
        self.refused[root] = why

    def _open(self, root: Path) -> CheckpointStore:
        with self.lock:
            store = self.stores.get(root)
            if store is None:
                home = self.base / workspace_key(root)
                home.mkdir(parents=True, exist_ok=True, mode=0o700)
                store = CheckpointStore(home, root, self.rules(), self.config.max_store_mb * 1024 * 1024,
                                        self.config.max_age_days * 86_400)
                self.stores[root] = store
        return store

    def close(self) -> None:
        """Release every store's inotify watches (service shutdown): an inotify instance is a
        per-user resource (128 by default), so a process that made many must give them back."""
        with self.lock:
            stores, self.stores = list(self.stores.values()), {}
        for store in stores:
            store.watcher.close()
            store.objects.close()

    def recover_all(self) -> list[tuple[str, str]]:
        """Finish every restore a kill interrupted (at service start); one line for each."""
        lines: list[tuple[str, str]] = []
        if not self.base.is_dir():
            return lines
        for journal in sorted(self.base.glob("*/journal.json")):
            root = journal.parent
            try:
                root = Path(json.loads((journal.parent / "meta.json").read_text())["root"])
                line = self._open(root).recover()
            except (OSError, ValueError, KeyError) as exc:
                line = f"checkpoints: could not finish the interrupted restore in {journal.parent}: {exc}"
            if line:
                log.warning("%s", line)
                lines.append((str(root), line))
        return lines
