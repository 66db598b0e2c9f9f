"""A hand-edited ``mcp.local.yaml`` while the gateway runs: new servers are picked up, an entry
changed or removed is named with the one line that applies it (a restart), never ignored.

Pure: the gateway stats the file and hands over what it read.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from services.mcp_gateway.settings import ServerSettings

RESTART_LINE = "edited in mcp.local.yaml; `ai-coding down` applies it"


@dataclass(frozen=True)
class SidecarDelta:
    added: tuple[ServerSettings, ...] = ()
    stale: tuple[str, ...] = ()
    """Names whose running settings no longer match the file (changed, or removed from it)."""


def sidecar_delta(running: Mapping[str, ServerSettings], read: Sequence[ServerSettings],
                  taken: Collection[str]) -> SidecarDelta:
    """What an edit means: ``running`` are the servers that came from the sidecar, ``read`` what
    it holds now, ``taken`` every name in use (a new entry reusing one is not added)."""
    now = {s.name: s for s in read}
    added = tuple(s for s in read if s.name not in taken)
    stale = tuple(name for name, s in running.items() if now.get(name) != s)
    return SidecarDelta(added, stale)


def file_stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
