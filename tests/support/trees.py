"""A workspace's tree hash for tests: every path with its kind, permission bits and bytes (or link
target), so two equal hashes mean a byte-for-byte equal tree (mtimes aside)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def tree_listing(root: Path, skip: tuple[str, ...] = (".git", ".ai-coding")) -> list[tuple[str, str, int, str]]:
    """(path, kind, mode, content digest or link target) for everything below ``root``."""
    rows: list[tuple[str, str, int, str]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                rows.append((rel, "link", 0, os.readlink(path)))
            elif stat.S_ISDIR(st.st_mode):
                rows.append((rel, "dir", stat.S_IMODE(st.st_mode), ""))
            else:
                rows.append((rel, "file", stat.S_IMODE(st.st_mode), hashlib.sha256(path.read_bytes()).hexdigest()))
        for d in list(dirnames):
            if (Path(dirpath) / d).is_symlink():
                dirnames.remove(d)
    return sorted(rows)


def tree_hash(root: Path, skip: tuple[str, ...] = (".git", ".ai-coding")) -> str:
    return hashlib.sha256(repr(tree_listing(root, skip)).encode()).hexdigest()
