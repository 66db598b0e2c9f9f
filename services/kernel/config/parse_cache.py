"""What each config file parsed to, kept so an unchanged file is not parsed again.

Every ``ai-coding`` command reads the user's config, and PyYAML is the costliest thing a warm
``ai-coding run`` did before its turn was sent: importing it compiles its scanner's regexes
(~20 ms on 2 cores) before it reads a byte. A file's text and the plain data it parsed to are
kept as JSON, one entry per config file; a later read whose text is byte for byte the same
takes the data from there and never imports ``yaml``.

- **Exact.** An entry is used only when its text equals the file's text now; what YAML gives
  that JSON does not carry the same (dates, sets, non-string keys, non-finite numbers, a mapping
  or list shared through an anchor) is never kept, so that file is parsed every time.
- **Private.** The entries live in the user's data dir (:mod:`services.kernel.datadir`), which
  no workspace may contain and sandboxed commands cannot see: an entry decides the config, so
  one that someone else could write would be a way in. A directory or entry not owned by the
  user, or that others may write, is ignored.
- **Optional.** Any failure to read or write an entry (no HOME, a read-only disk, a corrupt
  entry) falls back to parsing the file; nothing is reported.
"""

from __future__ import annotations

import json
import math
import os
import zlib
from pathlib import Path
from typing import Any

from services.kernel.datadir import data_dir

SUBDIR = ("cache", "config")
MAX_ENTRIES = 64
"""Entries kept at most (one per config file path: the user file and a few per project); the
oldest go first when a new one would pass this."""


def entry_path(source: Path, base: Path | None = None) -> Path:
    """Where the entry for ``source`` lives (one per config file path)."""
    name = f"{zlib.crc32(str(source).encode('utf-8', 'surrogateescape')):08x}.json"
    return (base or data_dir()).joinpath(*SUBDIR, name)


def _private(path: Path) -> bool:
    st = path.stat()
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def lookup(source: Path, text: str, base: Path | None = None) -> dict[str, Any] | None:
    """The data ``source`` parsed to when its text was ``text``, or None."""
    entry = entry_path(source, base)
    try:
        if not (_private(entry.parent) and _private(entry)):
            return None
        kept = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("path") != str(source) or kept.get("text") != text:
        return None
    data = kept.get("data")
    return data if isinstance(data, dict) else None


def store(source: Path, text: str, data: dict[str, Any], base: Path | None = None) -> None:
    """Keep what ``text`` parsed to, when JSON gives it back exactly; failures are ignored."""
    if not carried_exactly(data):
        return
    entry = entry_path(source, base)
    try:
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(entry.parent):
            return
        tmp = entry.with_name(f".{entry.name}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"path": str(source), "text": text, "data": data}, out, ensure_ascii=False)
        os.replace(tmp, entry)
        _trim(entry.parent)
    except (OSError, ValueError):
        return


def _trim(directory: Path) -> None:
    entries = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    for old in entries[:-MAX_ENTRIES]:
        old.unlink(missing_ok=True)


def carried_exactly(value: object) -> bool:
    """True when ``json.loads(json.dumps(value))`` gives ``value`` back: the same types, keys and
    values, and no container reached twice (an anchor's alias is the same object in YAML's result,
    two copies in JSON's)."""
    seen: set[int] = set()

    def plain(item: object) -> bool:
        if item is None or isinstance(item, (str, bool, int)):
            return type(item) in (str, bool, int, type(None))
        if type(item) is float:
            return math.isfinite(item)
        if type(item) is dict or type(item) is list:
            if id(item) in seen:
                return False
            seen.add(id(item))
            if type(item) is dict:
                return all(type(k) is str and plain(v) for k, v in item.items())
            return all(plain(v) for v in item)
        return False

    return plain(value)
