"""The checkpoint object store's packs: small objects share one file per flush, survive a reopen,
and a sweep drops what nothing references (rewriting partly dead packs) without losing the rest."""

from __future__ import annotations

import os
from pathlib import Path

from services.tools.checkpoints import objects as objects_module
from services.tools.checkpoints.objects import LOOSE_MIN, ObjectStore
from services.tools.checkpoints.restore import Plan, apply
from services.tools.checkpoints.snapshot import Rules, StatCache, scan


def _files(store: ObjectStore) -> list[Path]:
    return [p for p in store.root.rglob("*") if p.is_file()]


def test_a_flush_writes_one_pack_that_a_new_process_reads(tmp_path: Path) -> None:
    store = ObjectStore(tmp_path / "objects")
    keys = [store.put(f"object {i}".encode()) for i in range(500)]
    assert _files(store) == []  # nothing on disk before the flush
    store.flush()
    assert len(_files(store)) == 1
    again = ObjectStore(tmp_path / "objects")
    assert [again.get(k) for k in keys] == [f"object {i}".encode() for i in range(500)]
    assert again.size() == store.size() == _files(store)[0].stat().st_size


def test_big_objects_stay_loose_and_both_kinds_count_in_the_size(tmp_path: Path) -> None:
    store = ObjectStore(tmp_path / "objects")
    big = store.put(os.urandom(LOOSE_MIN))
    small = store.put(b"small")
    store.flush()
    assert store.path(big).is_file() and store.get(big) and store.get(small) == b"small"
    assert store.size() == sum(p.stat().st_size for p in _files(store))


def test_a_sweep_rewrites_a_partly_dead_pack_and_deletes_a_dead_one(tmp_path: Path) -> None:
    store = ObjectStore(tmp_path / "objects")
    kept = [store.put(f"kept {i}".encode() * 50) for i in range(20)]
    dropped = [store.put(f"dropped {i}".encode() * 50) for i in range(20)]
    store.flush()
    gone = [store.put(f"gone {i}".encode() * 50) for i in range(20)]
    store.flush()
    before = store.size()
    freed = store.sweep(set(kept))
    assert freed > 0 and store.size() == before - freed == sum(p.stat().st_size for p in _files(store))
    assert len(_files(store)) == 1
    reopened = ObjectStore(tmp_path / "objects")
    assert all(reopened.has(k) for k in kept) and not any(reopened.has(k) for k in dropped + gone)
    assert reopened.get(kept[3]) == b"kept 3" * 50


def test_many_small_packs_are_merged_into_one(tmp_path: Path) -> None:
    store = ObjectStore(tmp_path / "objects")
    keys = []
    for i in range(objects_module.MERGE_AT):
        keys.append(store.put(f"step {i}".encode()))
        store.flush()
    assert len(_files(store)) == 1
    assert [ObjectStore(tmp_path / "objects").get(k) for k in keys] == [f"step {i}".encode() for i in range(len(keys))]


def test_a_torn_or_left_over_pack_is_ignored_and_the_rest_is_read(tmp_path: Path) -> None:
    store = ObjectStore(tmp_path / "objects")
    key = store.put(b"whole")
    store.flush()
    (store.pack_root / "torn.pack").write_bytes(b"AICPACK1 half of a pack")
    leftover = store.pack_root / ".old-1-0.tmp"
    leftover.write_bytes(b"a kill left this")
    os.utime(leftover, (1, 1))
    again = ObjectStore(tmp_path / "objects")
    assert again.get(key) == b"whole"
    assert not leftover.exists()


def test_a_restore_writes_a_file_in_place_but_leaves_a_hard_linked_one_its_bytes(tmp_path: Path) -> None:
    root, store = tmp_path / "ws", ObjectStore(tmp_path / "objects")
    root.mkdir()
    (root / "plain.txt").write_text("old plain")
    (root / "linked.txt").write_text("old linked")
    outside = tmp_path / "outside.txt"
    os.link(root / "linked.txt", outside)
    rules = Rules(frozenset(), 1 << 20)
    first = store.flatten(scan(root, store, StatCache(), rules).tree)
    plain_inode = (root / "plain.txt").stat().st_ino
    (root / "plain.txt").write_text("new plain, longer than before")
    (root / "linked.txt").write_text("new linked")
    problems = apply(root, store, Plan(write=[(p, first[p]) for p in ("plain.txt", "linked.txt")]))
    assert problems == []
    assert (root / "plain.txt").read_text() == "old plain" and (root / "plain.txt").stat().st_ino == plain_inode
    assert (root / "plain.txt").stat().st_mtime_ns == first["plain.txt"].mtime_ns
    assert (root / "linked.txt").read_text() == "old linked"
    assert outside.read_text() == "new linked"  # the other name is not the workspace's to change
