"""The empty read-only ``.git`` a root without a repository gets inside the sandbox exists on the host
only while a sandboxed command runs there.

bubblewrap (0.8 here: no overlays) needs a mount point to exist before it can mount over it, and
the workspace is a bind mount of the host's folder, so the placeholder must be a real directory
for as long as a command may see the root. Each command takes a lease on the placeholders this
service made under its roots; when the last lease ends the directory is removed again (``rmdir``:
only while still empty, so a repository the user created meanwhile stays). A user's folder is
left as it was: no ``.git`` appears in it between commands.

State is per process and touched only from the service's event loop thread. A service killed
while a command ran (SIGKILL: nothing of it runs) cannot remove its placeholders, so each process
also lists them in a journal file named after it (``<data dir>/tools/placeholders/<pid>.<start>``);
the next tools service to start removes those of owners that are gone (still only while empty).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from services.tools.reaper import owner_alive, owner_token

_LEASES: dict[str, int] = {}
"""Placeholder path (made by this process) -> commands holding it."""
_journal: Path | None = None
"""Where this process lists its placeholders (None: not kept, as in unit tests)."""


def keep_journal(folder: Path) -> int:
    """List this process's placeholders under ``folder`` from now on (made with the first one),
    after removing those that services which are gone left behind; how many leftovers were removed."""
    global _journal
    removed = 0
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if owner_alive(entry.name):
                continue
            with contextlib.suppress(OSError):
                for line in entry.read_text(errors="replace").splitlines():
                    with contextlib.suppress(OSError):
                        os.rmdir(line)  # only while still empty: a repository made since stays
                        removed += 1
                entry.unlink()
    _journal = folder / owner_token()
    _save()
    return removed


def _save() -> None:
    if _journal is None:
        return
    with contextlib.suppress(OSError):
        if _LEASES:
            _journal.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            _journal.write_text("".join(f"{path}\n" for path in _LEASES))
        else:
            _journal.unlink(missing_ok=True)


def note_created(path: Path) -> None:
    """``path`` was just made as a placeholder: it is ours to remove."""
    _LEASES.setdefault(str(path), 0)
    _save()


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
            _save()


def ours() -> list[str]:
    """The placeholders this process made and has not removed (for tests)."""
    return sorted(_LEASES)
