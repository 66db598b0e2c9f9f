"""Per-session file-state snapshots for the stale-read guard.

``read`` records (mtime, size, sha256) of the whole file; ``write``/``edit`` of
an existing file require a snapshot (else NEVER_READ) whose size and hash still
match the file on disk (else STALE). A touch that leaves the content unchanged
is not a conflict, so the hash, not the mtime, decides.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

from services.tools.errors import ToolError


@dataclass(frozen=True)
class Snapshot:
    """What a file looked like when this session last read or wrote it."""

    mtime_ns: int
    size: int
    sha256: str


def snapshot_of(path: Path, data: bytes | None = None) -> Snapshot:
    """The snapshot of ``path`` now (``data`` = its content when already in hand)."""
    st = path.stat()
    content = path.read_bytes() if data is None else data
    return Snapshot(st.st_mtime_ns, st.st_size, hashlib.sha256(content).hexdigest())


class FileStateTracker:
    """One session's snapshots, keyed by real path. Thread-safe (file tools run in threads)."""

    def __init__(self) -> None:
        self._snapshots: dict[Path, Snapshot] = {}
        self._lock = threading.Lock()
        self.write_lock = threading.Lock()
        """Held from the stale check to the new snapshot, so two writes in one session cannot
        both pass the check and lose one update."""

    def record(self, path: Path, snapshot: Snapshot) -> None:
        with self._lock:
            self._snapshots[path] = snapshot

    def get(self, path: Path) -> Snapshot | None:
        with self._lock:
            return self._snapshots.get(path)

    def check_writable(self, path: Path, shown: str) -> None:
        """Raise ``never_read`` or ``stale_read`` unless the existing file may be replaced."""
        known = self.get(path)
        if known is None:
            raise ToolError("never_read", f"{shown} exists but was not read in this session",
                            f"Read {shown} first, then write or edit it.")
        st = path.stat()
        if st.st_mtime_ns == known.mtime_ns and st.st_size == known.size:
            return
        if st.st_size != known.size or snapshot_of(path).sha256 != known.sha256:
            raise ToolError("stale_read", f"{shown} changed since this session last read it",
                            f"Read {shown} again to see the current content, then redo the change.")
