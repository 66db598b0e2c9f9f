"""Content-addressed objects on disk: blobs (file bytes) and trees (one directory's entries)."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from services.tools.checkpoints import packs

FILE, DIR, LINK = "f", "d", "l"


@dataclass(frozen=True)
class Entry:
    """One path of a snapshot: a file (digest of its bytes), a directory (its tree) or a symlink
    (its target); ``mode`` is the permission bits, ``mtime_ns`` restored on files."""

    kind: str
    mode: int
    ref: str
    size: int = 0
    mtime_ns: int = 0


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


LOOSE_MIN = 256 * 1024
"""Objects this big are one file each (``objects/ab/cdef...``); smaller ones go into packs."""
PACK_BYTES = 32 * 1024 * 1024
"""A pack holds up to about this much (the first checkpoint writes several; a repack rewrites at most this)."""
SMALL_PACK, MERGE_AT = 1024 * 1024, 64
"""When this many packs are under ``SMALL_PACK`` bytes, a flush merges them into one."""
OPEN_PACKS = 32
"""Packs kept open for reading at most."""


class ObjectStore:
    """Write-once objects: small ones gathered in memory and written as one pack per
    :meth:`flush` (one file per checkpoint), big ones as a file each (temp file + rename)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pack_root = root / "packs"
        self.pack_root.mkdir(parents=True, exist_ok=True)
        self.known: set[str] = set()
        """Loose objects seen on disk."""
        self.packs = packs.load(self.pack_root)
        self.index: dict[str, packs.Located] = {}
        for name, (_, rows) in self.packs.items():
            for key, offset, length in rows:
                self.index.setdefault(key, (name, offset, length))
        self.pending: dict[str, bytes] = {}
        self.pending_bytes = 0
        self.fds: dict[str, int] = {}
        """Open packs (read with pread), the most recently opened last."""
        self.fd_lock = threading.Lock()
        """Reads may come from outside the store's lock (a diff's line counts)."""
        self.written = 0
        """Bytes of objects this process wrote (the store's size follows it between sweeps)."""

    def path(self, key: str) -> Path:
        return self.root / key[:2] / key[2:]

    def has(self, key: str) -> bool:
        if key in self.index or key in self.pending or key in self.known:
            return True
        if self.path(key).exists():
            self.known.add(key)
            return True
        return False

    def put(self, data: bytes) -> str:
        key = digest(data)
        if key in self.index or key in self.pending:
            return key
        if len(data) < LOOSE_MIN:
            self.pending[key] = data
            self.pending_bytes += len(data)
            if self.pending_bytes >= PACK_BYTES:
                self.flush()
        elif not self.has(key):
            target = self.path(key)
            target.parent.mkdir(exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            with open(tmp, "wb") as handle:
                handle.write(data)
            os.replace(tmp, target)
            self.known.add(key)
            self.written += len(data)
        return key

    def flush(self, durable: bool = False) -> None:
        """Write the objects gathered since the last flush as one pack (``durable``: synced to
        disk first; a restore's starting point must survive a power cut)."""
        if self.pending:
            self._write(list(self.pending.items()), durable)
            self.pending, self.pending_bytes = {}, 0
        small = [name for name, (size, _) in self.packs.items() if size < SMALL_PACK]
        if len(small) >= MERGE_AT:
            self._repack(small, None)

    def _write(self, objects: list[tuple[str, bytes]], durable: bool = False) -> None:
        name, size, where = packs.write_pack(self.pack_root, objects, durable)
        rows = []
        for (key, _), located in zip(objects, where, strict=True):
            self.index[key] = located
            rows.append((key, located[1], located[2]))
        self.packs[name] = (size, rows)
        self.written += size

    def get(self, key: str) -> bytes:
        data = self.pending.get(key)
        if data is not None:
            return data
        located = self.index.get(key)
        if located is not None:
            return self._read(located)
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError:
            self._reload()  # another process's pack (two services on one store)
            located = self.index.get(key)
            if located is None:
                raise
            return self._read(located)

    def _read(self, located: packs.Located) -> bytes:
        name, offset, length = located
        with self.fd_lock:
            fd = self.fds.get(name)
            if fd is None:
                if len(self.fds) >= OPEN_PACKS:
                    os.close(self.fds.pop(next(iter(self.fds))))
                fd = self.fds[name] = os.open(self.pack_root / f"{name}.pack", os.O_RDONLY | os.O_CLOEXEC)
            data = os.pread(fd, length, offset)
        if len(data) != length:
            raise OSError(f"pack {name} is shorter than its index says")
        return data

    def _forget(self, name: str) -> None:
        del self.packs[name]
        with self.fd_lock:
            fd = self.fds.pop(name, None)
            if fd is not None:
                os.close(fd)
        (self.pack_root / f"{name}.pack").unlink(missing_ok=True)

    def close(self) -> None:
        """Close the open packs (the store is done with)."""
        with self.fd_lock:
            for fd in self.fds.values():
                os.close(fd)
            self.fds.clear()

    def _reload(self) -> None:
        for name, (size, rows) in packs.load(self.pack_root).items():
            if name not in self.packs:
                self.packs[name] = (size, rows)
                for key, offset, length in rows:
                    self.index.setdefault(key, (name, offset, length))

    def put_tree(self, entries: list[tuple[str, str, int, str, int, int]]) -> str:
        return self.put(json.dumps(entries, separators=(",", ":")).encode())

    def get_tree(self, key: str) -> dict[str, Entry]:
        rows = json.loads(self.get(key))
        return {row[0]: Entry(row[1], row[2], row[3], row[4], row[5]) for row in rows}

    def flatten(self, tree: str, prefix: str = "") -> dict[str, Entry]:
        """Every path below ``tree`` (relative, ``/``-separated) with its entry."""
        out: dict[str, Entry] = {}
        for name, entry in self.get_tree(tree).items():
            rel = f"{prefix}{name}"
            out[rel] = entry
            if entry.kind == DIR:
                out.update(self.flatten(entry.ref, f"{rel}/"))
        return out

    def diff_trees(self, a: str, b: str) -> tuple[dict[str, Entry], dict[str, Entry]]:
        """The entries of trees ``a`` and ``b`` that differ, each side's, as :meth:`flatten` would
        give them; folders with the same tree object are not read (a diff costs what changed)."""
        left: dict[str, Entry] = {}
        right: dict[str, Entry] = {}
        self._diff(a, b, "", left, right)
        return left, right

    def _diff(self, a: str, b: str, prefix: str, left: dict[str, Entry], right: dict[str, Entry]) -> None:
        if a == b:
            return
        tree_a, tree_b = self.get_tree(a), self.get_tree(b)
        for name in tree_a.keys() | tree_b.keys():
            old, new = tree_a.get(name), tree_b.get(name)
            if old == new:
                continue
            rel = f"{prefix}{name}"
            if old is not None and new is not None and old.kind == new.kind == DIR:
                left[rel], right[rel] = old, new
                self._diff(old.ref, new.ref, f"{rel}/", left, right)
                continue
            for entry, side in ((old, left), (new, right)):
                if entry is not None:
                    side[rel] = entry
                    if entry.kind == DIR:
                        side.update(self.flatten(entry.ref, f"{rel}/"))

    def reachable(self, tree: str, seen: set[str]) -> None:
        """Add ``tree`` and every object below it to ``seen``."""
        if tree in seen:
            return
        seen.add(tree)
        for entry in self.get_tree(tree).values():
            if entry.kind == DIR:
                self.reachable(entry.ref, seen)
            elif entry.kind == FILE:
                seen.add(entry.ref)

    def sweep(self, keep: set[str]) -> int:
        """Delete every object not in ``keep``; the bytes freed. A pack holding any such object is
        rewritten with the rest (or deleted when nothing in it is kept)."""
        self.flush()
        freed = 0
        for sub in self.root.iterdir():
            if not sub.is_dir() or sub == self.pack_root:
                continue
            for obj in sub.iterdir():
                key = sub.name + obj.name
                if key not in keep:
                    freed += obj.stat().st_size
                    obj.unlink()
                    self.known.discard(key)
        stale = [name for name, (_, rows) in self.packs.items()
                 if any(key not in keep or self.index[key][0] != name for key, _, _ in rows)]
        return freed + self._repack(stale, keep)

    def _repack(self, names: list[str], keep: set[str] | None) -> int:
        """Rewrite the packs ``names`` with only their objects in ``keep`` (None: all of them) that
        no other pack holds; the bytes freed. The new packs are in place before the old go, so a
        kill in between leaves copies, never a loss."""
        before = sum(self.packs[name][0] for name in names)
        written = self.written
        batch: list[tuple[str, bytes]] = []
        batch_bytes = 0
        for name in names:
            for key, offset, length in self.packs[name][1]:
                if self.index.get(key) != (name, offset, length):
                    continue
                if keep is not None and key not in keep:
                    del self.index[key]
                    continue
                batch.append((key, self._read((name, offset, length))))
                batch_bytes += length
                if batch_bytes >= PACK_BYTES:
                    self._write(batch)
                    batch, batch_bytes = [], 0
        if batch:
            self._write(batch)
        for name in names:
            self._forget(name)
        rewritten = self.written - written
        self.written -= before
        return before - rewritten

    def size(self) -> int:
        loose = sum(obj.stat().st_size for sub in self.root.iterdir() if sub.is_dir() and sub != self.pack_root
                    for obj in sub.iterdir())
        return loose + sum(size for size, _ in self.packs.values()) + self.pending_bytes
