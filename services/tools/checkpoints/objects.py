"""Content-addressed objects on disk: blobs (file bytes) and trees (one directory's entries)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

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


class ObjectStore:
    """``objects/ab/cdef...``: written once (temp file + rename), never changed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.known: set[str] = set()
        self.written = 0
        """Bytes of objects this process wrote (the store's size follows it between sweeps)."""

    def path(self, key: str) -> Path:
        return self.root / key[:2] / key[2:]

    def has(self, key: str) -> bool:
        if key in self.known:
            return True
        if self.path(key).exists():
            self.known.add(key)
            return True
        return False

    def put(self, data: bytes) -> str:
        key = digest(data)
        if not self.has(key):
            target = self.path(key)
            target.parent.mkdir(exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            with open(tmp, "wb") as handle:
                handle.write(data)
            os.replace(tmp, target)
            self.known.add(key)
            self.written += len(data)
        return key

    def get(self, key: str) -> bytes:
        return self.path(key).read_bytes()

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
        """Delete every object not in ``keep``; the bytes freed."""
        freed = 0
        for sub in self.root.iterdir():
            if not sub.is_dir():
                continue
            for obj in sub.iterdir():
                key = sub.name + obj.name
                if key not in keep:
                    freed += obj.stat().st_size
                    obj.unlink()
                    self.known.discard(key)
        return freed

    def size(self) -> int:
        return sum(obj.stat().st_size for sub in self.root.iterdir() if sub.is_dir() for obj in sub.iterdir())
