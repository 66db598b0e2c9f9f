"""Scan a workspace into tree objects, reading again only the files whose stat changed."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from services.tools.checkpoints.objects import DIR, FILE, LINK, ObjectStore

Row = tuple[str, str, int, str, int, int]
StatKey = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class Skipped:
    """A path a checkpoint does not hold, and why (a restore reports it, never silently)."""

    path: str
    why: str


@dataclass
class StatCache:
    """What the last scan saw: a file's stat key and digest, a directory's rows and tree."""

    files: dict[str, tuple[StatKey, str]] = field(default_factory=dict)
    dirs: dict[str, tuple[tuple[Row, ...], str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Rules:
    """What a scan leaves out: names excluded anywhere, files over ``max_file_bytes``."""

    exclude: frozenset[str]
    max_file_bytes: int


@dataclass
class Scan:
    tree: str
    files: int = 0
    read: int = 0
    skipped: list[Skipped] = field(default_factory=list)


def _key(st: os.stat_result) -> StatKey:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def scan(root: Path, objects: ObjectStore, cache: StatCache, rules: Rules) -> Scan:
    """The workspace's tree object (written, with every new blob), refreshing ``cache``."""
    result = Scan("")
    seen_files: dict[str, tuple[StatKey, str]] = {}
    seen_dirs: dict[str, tuple[tuple[Row, ...], str]] = {}
    result.tree = _scan_dir(str(root), "", objects, cache, rules, result, seen_files, seen_dirs)
    cache.files, cache.dirs = seen_files, seen_dirs
    return result


def _scan_dir(path: str, rel: str, objects: ObjectStore, cache: StatCache, rules: Rules, result: Scan,
              seen_files: dict[str, tuple[StatKey, str]], seen_dirs: dict[str, tuple[tuple[Row, ...], str]]) -> str:
    rows: list[Row] = []
    old_files = cache.files
    try:
        listing = list(os.scandir(path))
    except OSError as exc:
        result.skipped.append(Skipped(rel or ".", f"cannot list it ({exc.strerror})"))
        listing = []
    for entry in listing:
        name = entry.name
        if name in rules.exclude:
            continue
        sub = f"{rel}{name}"
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            result.skipped.append(Skipped(sub, f"cannot stat it ({exc.strerror})"))
            continue
        mode = st.st_mode
        if stat.S_ISREG(mode):
            result.files += 1
            key = _key(st)
            old = old_files.get(sub)
            if old is not None and old[0] == key:
                ref = old[1]
            elif st.st_size > rules.max_file_bytes:
                result.skipped.append(Skipped(sub, f"larger than the checkpoint cap ({rules.max_file_bytes:,} bytes)"))
                continue
            else:
                try:
                    with open(entry.path, "rb") as handle:
                        ref = objects.put(handle.read())
                except OSError as exc:
                    result.skipped.append(Skipped(sub, f"cannot read it ({exc.strerror})"))
                    continue
                result.read += 1
            seen_files[sub] = (key, ref)
            rows.append((name, FILE, stat.S_IMODE(mode), ref, st.st_size, st.st_mtime_ns))
        elif stat.S_ISDIR(mode):
            tree = _scan_dir(entry.path, f"{sub}/", objects, cache, rules, result, seen_files, seen_dirs)
            rows.append((name, DIR, stat.S_IMODE(mode), tree, 0, 0))
        elif stat.S_ISLNK(mode):
            rows.append((name, LINK, 0, os.readlink(entry.path), 0, 0))
        else:
            result.skipped.append(Skipped(sub, "not a regular file, directory or symlink"))
    rows.sort()
    frozen = tuple(rows)
    old_dir = cache.dirs.get(rel)
    tree = old_dir[1] if old_dir is not None and old_dir[0] == frozen else objects.put_tree(rows)
    seen_dirs[rel] = (frozen, tree)
    return tree
