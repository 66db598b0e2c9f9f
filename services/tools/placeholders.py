"""The empty read-only ``.git`` a root without a repository gets inside the sandbox exists on the host
only while a sandboxed command runs there.

bubblewrap (0.8 here: no overlays) needs a mount point to exist before it can mount over it, and
the workspace is a bind mount of the host's folder, so the placeholder must be a real directory
for as long as a command may see the root. Each command takes a lease on the placeholders this
service made under its roots; when the last lease ends the directory is removed again (``rmdir``:
only while still empty, so a repository the user created meanwhile stays). A user's folder is
left as it was: no ``.git`` appears in it between commands.

State is per process and touched only from the service's event loop thread.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

_LEASES: dict[str, int] = {}
"""Placeholder path (made by this process) -> commands holding it."""


def note_created(path: Path) -> None:
    """``path`` was just made as a placeholder: it is ours to remove."""
    _LEASES.setdefault(str(path), 0)


def lease(roots: Iterable[Path]) -> list[str]:
    """Hold every placeholder of ours under ``roots`` for one command; what to hand :func:`release`."""
    tops = [str(r).rstrip("/") + "/" for r in roots]
    held = [p for p in _LEASES if any(p.startswith(top) for top in tops)]
    for path in held:
        _LEASES[path] += 1
    return held


def release(held: Iterable[str]) -> None:
    """End one command's lease; a placeholder nobody holds any more is removed (if still empty)."""
    for path in held:
        if path not in _LEASES:
            continue
        _LEASES[path] -= 1
        if _LEASES[path] <= 0:
            del _LEASES[path]
            with contextlib.suppress(OSError):
                os.rmdir(path)


def ours() -> list[str]:
    """The placeholders this process made and has not removed (for tests)."""
    return sorted(_LEASES)
