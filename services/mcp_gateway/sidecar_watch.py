"""A hand-edited ``mcp.local.yaml`` while the gateway runs: new servers are picked up, an entry
changed or removed is named with the one line that applies it (a restart), never ignored.

The decisions are pure: the gateway stats the file and hands over what it read. Beside them,
:class:`DeclaredServers`, which the loop asks whether a gateway would have any server at all.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from services.kernel.config import load_config, read_yaml_file, user_config_path
from services.kernel.errors import ConfigError
from services.mcp_gateway.settings import ServerSettings, sidecar_path

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


class DeclaredServers:
    """Whether a gateway started now would have a server to run: an entry under ``mcp.servers`` in
    the user config or under ``servers`` in the sidecar (valid or not: a bad one is reported by the
    gateway). The loop asks before it starts a gateway on demand for a catalog; each file is read
    again only when its ``stat`` changed, so asking every step costs two stats."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = env
        self._files = (user_config_path(env), sidecar_path(env))
        self._stamps: tuple[object, ...] | None = None
        self._answer = True

    def __call__(self) -> bool:
        stamps = tuple(file_stamp(path) for path in self._files)
        if stamps != self._stamps:
            self._stamps, self._answer = stamps, self._read()
        return self._answer

    def _read(self) -> bool:
        sidecar = self._files[1]
        try:
            if load_config(None, env=self._env).get("mcp.servers"):
                return True
            return sidecar.is_file() and bool(read_yaml_file(sidecar).get("servers"))
        except ConfigError:
            return True  # unreadable: the gateway says what is wrong with it
