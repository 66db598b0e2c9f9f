"""A store over tools.checkpoints.max_store_mb drops its oldest checkpoints (never the newest)
down to 90% of the cap, and the checkpoints it keeps still restore."""

from __future__ import annotations

import os
from pathlib import Path

from services.tools.checkpoints.snapshot import Rules
from services.tools.checkpoints.store import CheckpointStore

CAP = 4 << 20


def test_the_store_stays_under_its_cap_and_keeps_the_newest_checkpoints(tmp_path: Path) -> None:
    root, home = tmp_path / "ws", tmp_path / "store"
    root.mkdir()
    home.mkdir()
    store = CheckpointStore(home, root, Rules(frozenset(), 1 << 20), CAP)
    taken = []
    for step in range(40):
        (root / f"f{step % 5}.bin").write_bytes(os.urandom(100_000))  # packed, ~100 KB a step
        (root / "big.bin").write_bytes(os.urandom(300_000 + step))  # loose, 300 KB a step
        taken.append(store.create("s", f"step {step}"))
        assert store.size() <= CAP, step
        assert store.size() == sum(p.stat().st_size for p in (home / "objects").rglob("*") if p.is_file())
    left = [c.checkpoint_id for c in store.checkpoints()]
    assert left == [c.checkpoint_id for c in taken[-len(left):]] and 1 < len(left) < 40
    store.restore("s", left[0])
    assert (root / "big.bin").stat().st_size == 300_000 + 40 - len(left)
    store.watcher.close()
