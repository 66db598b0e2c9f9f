"""The inotify-backed incremental scan gives the same tree as a full scan, whatever the shell did
(random creates, writes, chmods, deletes, moves of folders and re-creations under an old name)."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

from services.tools.checkpoints.objects import ObjectStore
from services.tools.checkpoints.snapshot import Rules, StatCache, scan
from services.tools.checkpoints.watcher import Watcher

RULES = Rules(frozenset({".git"}), 1 << 20)


def full_scan(root: Path, objects: ObjectStore) -> tuple[str, int, list[str]]:
    done = scan(root, objects, StatCache(), RULES)
    return done.tree, done.files, sorted(s.path for s in done.skipped)


def step(root: Path, rng: random.Random, n: int) -> None:
    dirs = [p for p in root.rglob("*") if p.is_dir() and not p.is_symlink()] + [root]
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    op = rng.choice(["mkdir", "write", "write", "append", "chmod", "rm", "rmtree", "mv", "mv_back", "link", "big"])
    where = rng.choice(dirs)
    if op == "mkdir":
        (where / f"d{n}" / "inner").mkdir(parents=True)
        (where / f"d{n}" / "inner" / "x.txt").write_text(str(n))
    elif op == "write" or not files:
        (where / f"f{n}.txt").write_text(f"{n}\n" * rng.randint(0, 5))
    elif op == "append":
        with open(rng.choice(files), "a") as handle:
            handle.write("more\n")
    elif op == "chmod":
        os.chmod(rng.choice(files), rng.choice([0o600, 0o644, 0o755]))
    elif op == "rm":
        rng.choice(files).unlink()
    elif op == "rmtree" and where != root:
        shutil.rmtree(where)
    elif op == "mv" and where != root:
        where.rename(root / f"moved{n}")
    elif op == "mv_back" and where != root:  # a folder moves away and a new one takes its name
        where.rename(root / f"away{n}")
        (where / "sub").mkdir(parents=True)
        (where / "sub" / "y.txt").write_text("new")
    elif op == "link":
        (where / f"l{n}").symlink_to(f"target{n}")
    elif op == "big":  # over the size cap: skipped, and named as skipped
        (where / f"big{n}.bin").write_bytes(b"x" * ((1 << 20) + 1))


def test_the_watched_scan_equals_a_full_scan_after_every_random_step(tmp_path: Path) -> None:
    root, objects = tmp_path / "ws", ObjectStore(tmp_path / "objects")
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "c.txt").write_text("c")
    (root / "top.txt").write_text("t")
    cache, watcher = StatCache(), Watcher()
    assert watcher.live
    rng = random.Random(5)
    scan(root, objects, cache, RULES, watcher)
    for n in range(300):
        step(root, rng, n)
        watched = scan(root, objects, cache, RULES, watcher)
        assert (watched.tree, watched.files, sorted(s.path for s in watched.skipped)) == full_scan(root, objects), \
            f"step {n}"
    watcher.close()


def test_an_unchanged_workspace_reads_nothing_and_a_changed_file_only_itself(tmp_path: Path) -> None:
    root, objects = tmp_path / "ws", ObjectStore(tmp_path / "objects")
    for i in range(50):
        (root / f"d{i % 5}").mkdir(parents=True, exist_ok=True)
        (root / f"d{i % 5}" / f"f{i}").write_text(str(i))
    cache, watcher = StatCache(), Watcher()
    first = scan(root, objects, cache, RULES, watcher)
    assert (first.files, first.read) == (50, 50)
    again = scan(root, objects, cache, RULES, watcher)
    assert (again.files, again.read, again.tree) == (50, 0, first.tree)
    (root / "d3" / "f8").write_text("changed")
    changed = scan(root, objects, cache, RULES, watcher)
    assert (changed.files, changed.read) == (50, 1) and changed.tree != first.tree
    watcher.close()
