"""The SQLite file of a memory store: opened in WAL mode, migrated, private to its owner."""

from __future__ import annotations

import gc
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from services.kernel.statedir import STATE_DIR, ensure_state_dir
from services.memory.errors import StoreUnavailable
from services.memory.migrations import NOTE_TERMS_TABLE, migrate


def open_database(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """The connection to ``path`` (created 0600 in a 0700 directory), at the latest schema version;
    :class:`StoreUnavailable` with the fix when the file cannot be opened or migrated."""
    try:
        if path.parent.name == STATE_DIR:
            ensure_state_dir(path.parent.parent)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        db = sqlite3.connect(str(path), timeout=busy_timeout_ms / 1000.0, isolation_level=None,
                             check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a commit survives a killed process (the WAL is in the page cache);
        # only an OS crash can lose the last transactions.
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        migrate(db)
        db.execute(NOTE_TERMS_TABLE)
        file_mode_private(path)
    except (sqlite3.Error, OSError, RuntimeError) as exc:
        raise StoreUnavailable(
            f"cannot open the memory store {path}: {exc}",
            hint="Check the disk and file permissions; move a corrupt memory.db aside to start fresh.",
        ) from None
    return db


@contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[None]:
    """One ``BEGIN IMMEDIATE`` transaction (the write lock first, so a reader never has to upgrade):
    committed when the block ends, rolled back when it raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a store loads.

    Loading makes several objects per note, none of them cyclic garbage, yet each
    700 allocations start a collection that walks the ever larger heap: at 100,000
    notes those collections measured about a third of the time to open a store.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def file_mode_private(path: Path) -> None:
    """Make the store's files readable by the owner only."""
    for suffix in ("", "-wal", "-shm"):
        target = Path(f"{path}{suffix}")
        if target.exists():
            os.chmod(target, 0o600)
