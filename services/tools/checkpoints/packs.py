"""Pack files: many small objects in one file, so a checkpoint creates one file, not one per
changed file and folder.

``packs/<name>.pack`` is ``MAGIC``, the objects' bytes back to back, then the index (for each
object its SHA-256 digest, offset and length) and a trailer (the index's offset, its count,
``END``). A pack is written whole to a temporary name and renamed into place, so a kill leaves
it absent or complete; packs are never changed, only replaced by smaller ones (a repack) when
the objects nothing references any more are dropped.
"""

from __future__ import annotations

import itertools
import logging
import os
import struct
import time
from pathlib import Path

log = logging.getLogger("ai_coding.tools.checkpoints")

MAGIC, END = b"AICPACK1", b"AICPKEND"
ROW = struct.Struct(">32sQQ")
TRAILER = struct.Struct(">QI8s")
_serial = itertools.count()

Located = tuple[str, int, int]
"""Where an object is: (pack name, offset, length)."""


def write_pack(folder: Path, objects: list[tuple[str, bytes]], durable: bool = False) -> tuple[str, int,
                                                                                                list[Located]]:
    """Write ``objects`` (key, bytes) as one new pack in ``folder``; (its name, its size, where
    each object is, in order). ``durable`` syncs it to disk before the rename."""
    name = f"{time.time_ns():x}-{os.getpid()}-{next(_serial)}"
    parts: list[bytes] = [MAGIC]
    offset = len(MAGIC)
    rows: list[bytes] = []
    where: list[Located] = []
    for key, data in objects:
        parts.append(data)
        rows.append(ROW.pack(bytes.fromhex(key), offset, len(data)))
        where.append((name, offset, len(data)))
        offset += len(data)
    parts.extend(rows)
    parts.append(TRAILER.pack(offset, len(rows), END))
    tmp = folder / f".{name}.tmp"
    with open(tmp, "wb") as handle:
        handle.writelines(parts)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(tmp, folder / f"{name}.pack")
    return name, offset + len(rows) * ROW.size + TRAILER.size, where


def read_index(path: Path) -> list[tuple[str, int, int]]:
    """The (key, offset, length) of every object in the pack at ``path`` (ValueError: not a pack)."""
    with open(path, "rb") as handle:
        handle.seek(-TRAILER.size, os.SEEK_END)
        at, count, end = TRAILER.unpack(handle.read(TRAILER.size))
        if end != END:
            raise ValueError(f"{path.name} is not a complete pack")
        handle.seek(at)
        raw = handle.read(count * ROW.size)
    if len(raw) != count * ROW.size:
        raise ValueError(f"{path.name} has a short index")
    return [(digest.hex(), offset, length) for digest, offset, length in ROW.iter_unpack(raw)]


def load(folder: Path) -> dict[str, tuple[int, list[tuple[str, int, int]]]]:
    """Every complete pack in ``folder``: name -> (file size, its index). Temporary files a kill
    left behind (older than a minute: not another writer's) go."""
    found: dict[str, tuple[int, list[tuple[str, int, int]]]] = {}
    for entry in os.scandir(folder):
        if entry.name.endswith(".tmp"):
            try:
                if entry.stat().st_mtime < time.time() - 60:
                    os.unlink(entry.path)
            except OSError:
                pass
            continue
        if not entry.name.endswith(".pack"):
            continue
        try:
            found[entry.name.removesuffix(".pack")] = (entry.stat().st_size, read_index(Path(entry.path)))
        except (OSError, ValueError) as exc:
            log.warning("checkpoints: ignoring the unreadable pack %s: %s", entry.path, exc)
    return found
