"""Which directories changed since the last scan, from Linux inotify (through libc, no package).

Every directory a scan walks is watched; a checkpoint then walks again only the directories with
events (and their ancestors, whose trees change with them). Anything the watcher cannot vouch for
(queue overflow, a moved directory's old subtree, a watch limit, no inotify) falls back to a
full scan of the part in question, so the result is the same as a full scan, only cheaper.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import struct

log = logging.getLogger("ai_coding.tools.checkpoints")

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
IN_ONLYDIR, IN_DONTFOLLOW = 0x01000000, 0x02000000
MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONTFOLLOW)
EVENT = struct.Struct("iIII")


def _libc() -> ctypes.CDLL | None:
    """The C library: the process's own symbols first (``find_library`` runs ``ldconfig``, ~30 ms)."""
    for name in (None, "find"):
        try:
            lib = ctypes.CDLL(None if name is None else ctypes.util.find_library("c"), use_errno=True)
            lib.inotify_init1  # noqa: B018 -- present on Linux only
        except (OSError, AttributeError):
            continue
        return lib
    return None


class Watcher:
    """The inotify watches of one workspace: rel dir ("" root, else "a/b/") <-> watch descriptor."""

    def __init__(self) -> None:
        self.lib = _libc()
        self.fd = -1 if self.lib is None else int(self.lib.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
        self.by_wd: dict[int, str] = {}
        self.by_rel: dict[str, int] = {}
        self.dirty: set[str] = set()
        self.hot: set[str] = set()
        if self.fd < 0:
            log.info("checkpoints: no inotify here; every checkpoint scans the whole workspace")

    @property
    def live(self) -> bool:
        return self.fd >= 0

    def watch(self, path: str, rel: str) -> None:
        """Watch ``path`` (before it is listed, so no change after the listing is missed). A folder
        watched already keeps its watch (a folder that left lost it in :meth:`collect`)."""
        if self.fd < 0 or self.lib is None or rel in self.by_rel:
            return
        wd = int(self.lib.inotify_add_watch(self.fd, path.encode(), MASK))
        if wd < 0:
            err = ctypes.get_errno()
            log.warning("checkpoints: cannot watch %s (%s); checkpoints scan the whole workspace from now on",
                        path, os.strerror(err))
            self.close()
            return
        old = self.by_wd.get(wd)
        if old is not None and old != rel:  # the same directory under another name: it was moved
            self._forget_below(old)
        self.by_wd[wd], self.by_rel[rel] = rel, wd

    def _forget_below(self, rel: str) -> None:
        for other in [r for r in self.by_rel if r == rel or r.startswith(rel)]:
            wd = self.by_rel.pop(other)
            if self.by_wd.get(wd) == other:
                del self.by_wd[wd]

    def watched(self, rel: str) -> bool:
        """``rel`` is watched, so its events are seen (valid after :meth:`collect`)."""
        return self.fd >= 0 and rel in self.by_rel

    def changed(self, rel: str) -> bool:
        """Something in ``rel`` itself (not only below it) had an event since the last collect."""
        return rel in self.dirty

    def clean(self, rel: str) -> bool:
        """Nothing below ``rel`` changed since it was last walked (valid after :meth:`collect`)."""
        return self.fd >= 0 and rel in self.by_rel and rel not in self.hot

    def collect(self) -> None:
        """Read the queued events: the directories to walk again, and their ancestors."""
        dirty: set[str] = set()
        while self.fd >= 0:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            offset = 0
            while offset < len(data):
                wd, mask, _, size = EVENT.unpack_from(data, offset)
                offset += EVENT.size + size
                if mask & IN_Q_OVERFLOW:
                    log.info("checkpoints: inotify queue overflow; the next checkpoint scans everything")
                    self.by_rel.clear()
                    self.by_wd.clear()
                    continue
                rel = self.by_wd.get(wd)
                if rel is None:
                    continue
                if mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED):
                    self._forget_below(rel)
                    continue
                dirty.add(rel)
        self.dirty = dirty
        hot: set[str] = set()
        for rel in dirty:
            parts = rel.split("/")[:-1]
            hot.add("")
            for i in range(1, len(parts) + 1):
                hot.add("/".join(parts[:i]) + "/")
        self.hot = hot

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1
        self.by_wd.clear()
        self.by_rel.clear()
