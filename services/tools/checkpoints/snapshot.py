"""Scan a workspace into tree objects, reading again only the files whose stat changed."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from services.tools.checkpoints.errors import CheckpointsOff
from services.tools.checkpoints.objects import DIR, FILE, LINK, ObjectStore
from services.tools.checkpoints.watcher import Watcher

Row = tuple[str, str, int, str, int, int]
StatKey = tuple[int, int, int, int, int]


def stat_key(st: os.stat_result) -> StatKey:
    """What says a file is unchanged: a different one is read again."""
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode


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
    skipped: dict[str, list[Skipped]] = field(default_factory=dict)
    """What each directory's subtree skipped, and (``counts``) how many files it holds."""
    counts: dict[str, int] = field(default_factory=dict)
    own: dict[str, tuple[int, list[Skipped]]] = field(default_factory=dict)
    """A directory's own files (not its folders') counted, and its own skipped entries."""


@dataclass(frozen=True)
class Rules:
    """What a scan leaves out: names excluded anywhere, files over ``max_file_bytes``."""

    exclude: frozenset[str]
    max_file_bytes: int
    max_files: int = 0
    """More files than this (0: no limit) and the scan stops: the workspace is too big to checkpoint."""


class TooManyFiles(CheckpointsOff):
    """A workspace with more files than ``tools.checkpoints.max_files``."""

    reason = "checkpoints_too_many_files"


@dataclass
class Scan:
    tree: str
    files: int = 0
    read_paths: set[str] = field(default_factory=set)
    """The files read (their stat changed, or they are new)."""
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def read(self) -> int:
        return len(self.read_paths)


def scan(root: Path, objects: ObjectStore, cache: StatCache, rules: Rules, watcher: Watcher | None = None) -> Scan:
    """The workspace's tree object (written, with every new blob), refreshing ``cache``. With a
    live ``watcher`` only the directories with changes are walked again."""
    result = Scan("")
    if watcher is not None:
        watcher.collect()
    result.tree = _Walk(objects, cache, rules, result, watcher if watcher is not None and watcher.live else None
                        ).dir(str(root), "")
    if rules.max_files and result.files >= rules.max_files:  # folders counted from the cache, too
        raise _too_many(rules)
    return result


def _too_many(rules: Rules) -> TooManyFiles:
    return TooManyFiles(f"the workspace has more than {rules.max_files:,} files; checkpoints are off for it",
                        hint="Raise tools.checkpoints.max_files or exclude big folders with "
                        "tools.checkpoints.exclude, then restart the tools service.")


class _Walk:
    def __init__(self, objects: ObjectStore, cache: StatCache, rules: Rules, result: Scan,
                 watcher: Watcher | None) -> None:
        self.objects, self.cache, self.rules, self.result, self.watcher = objects, cache, rules, result, watcher

    def dir(self, path: str, rel: str) -> str:
        cache, watcher = self.cache, self.watcher
        old_dir = cache.dirs.get(rel)
        if watcher is not None and old_dir is not None and rel in cache.counts and watcher.watched(rel):
            if watcher.clean(rel):
                self.result.files += cache.counts[rel]
                self.result.skipped.extend(cache.skipped.get(rel, ()))
                return old_dir[1]
            if not watcher.changed(rel) and rel in cache.own:
                return self._below(path, rel, old_dir)
        if watcher is not None:
            watcher.watch(path, rel)
        rows: list[Row] = []
        skipped: list[Skipped] = []
        result = self.result
        files_before, skipped_before = result.files, len(result.skipped)
        own_files = 0
        files = cache.files
        max_bytes = self.rules.max_file_bytes
        exclude = self.rules.exclude
        try:
            listing = list(os.scandir(path))
        except OSError as exc:
            skipped.append(Skipped(rel or ".", f"cannot list it ({exc.strerror})"))
            listing = []
        for entry in listing:
            name = entry.name
            if name in exclude:
                continue
            sub = rel + name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                skipped.append(Skipped(sub, f"cannot stat it ({exc.strerror})"))
                continue
            mode = st.st_mode
            if stat.S_ISREG(mode):
                result.files += 1
                own_files += 1
                if result.files == self.rules.max_files:
                    raise _too_many(self.rules)
                key = stat_key(st)
                old = files.get(sub)
                if old is not None and old[0] == key:
                    ref = old[1]
                elif st.st_size > max_bytes:
                    skipped.append(Skipped(sub, f"larger than the checkpoint cap ({max_bytes:,} bytes)"))
                    continue
                else:
                    try:
                        with open(entry.path, "rb") as handle:
                            ref = self.objects.put(handle.read())
                    except OSError as exc:
                        skipped.append(Skipped(sub, f"cannot read it ({exc.strerror})"))
                        continue
                    result.read_paths.add(sub)
                    files[sub] = (key, ref)
                rows.append((name, FILE, mode & 0o7777, ref, st.st_size, st.st_mtime_ns))
            elif stat.S_ISDIR(mode):
                rows.append((name, DIR, mode & 0o7777, self.dir(entry.path, sub + "/"), 0, 0))
            elif stat.S_ISLNK(mode):
                rows.append((name, LINK, 0, os.readlink(entry.path), 0, 0))
            else:
                skipped.append(Skipped(sub, "not a regular file, directory or symlink"))
        rows.sort()
        result.skipped.extend(skipped)
        return self._done(rel, rows, old_dir, (own_files, skipped), files_before, skipped_before)

    def _below(self, path: str, rel: str, old_dir: tuple[tuple[Row, ...], str]) -> str:
        """Only folders below ``rel`` changed (inotify saw nothing in it): its own entries are the
        ones listed last time, and only its folders are looked at again."""
        result = self.result
        own = self.cache.own[rel]
        files_before, skipped_before = result.files, len(result.skipped)
        result.files += own[0]
        rows = [row if row[1] != DIR else (row[0], DIR, row[2], self.dir(f"{path}/{row[0]}", f"{rel}{row[0]}/"), 0, 0)
                for row in old_dir[0]]
        result.skipped.extend(own[1])
        return self._done(rel, rows, old_dir, own, files_before, skipped_before)

    def _done(self, rel: str, rows: list[Row], old_dir: tuple[tuple[Row, ...], str] | None,
              own: tuple[int, list[Skipped]], files_before: int, skipped_before: int) -> str:
        """``rel``'s tree object (written when its rows changed), its cache entries refreshed."""
        cache, result = self.cache, self.result
        frozen = tuple(rows)
        if old_dir is not None and old_dir[0] == frozen:
            tree = old_dir[1]
        else:
            tree = self.objects.put_tree(rows)
            if old_dir is not None:  # files gone from this directory leave the stat cache
                present = {row[0] for row in rows}
                for row in old_dir[0]:
                    if row[1] == FILE and row[0] not in present:
                        cache.files.pop(rel + row[0], None)
        cache.dirs[rel] = (frozen, tree)
        cache.skipped[rel] = result.skipped[skipped_before:]  # this subtree's, its folders' included
        cache.counts[rel] = result.files - files_before
        cache.own[rel] = own
        return tree
