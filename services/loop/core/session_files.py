"""The files under a workspace's sessions folder, one level below the session store: atomic
writes, the ``.corrupt-<time>`` names damaged files are moved to, and the one sentence a file that
cannot be written gets."""

from __future__ import annotations

import contextlib
import errno
import os
import time
from pathlib import Path

from services.loop.core.errors import SessionStorageError


def aside_path(path: Path) -> Path:
    """A fresh ``<name>.corrupt-<time>`` next to ``path`` (never an existing file)."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 2
    while aside.exists():
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    return aside


def owner_name() -> str:
    """The name of the user this process runs as (its uid when it has none)."""
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        return str(os.geteuid())


def storage_error(err: OSError, folder: Path) -> SessionStorageError:
    """One sentence for a session file that cannot be written: which file, why, what to do."""
    path = err.filename or str(folder)
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = f"Free disk space on the filesystem of {folder}, then continue the session with --session."
    elif err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = f"Make {folder} writable (or run in a workspace you can write to)."
    else:
        hint = f"Check the disk and the permissions of {folder}."
    return SessionStorageError(f"cannot write the session file {path}: {err.strerror or err}.", hint=hint)


def atomic_write(path: Path, data: bytes, fsync: bool) -> None:
    """Write ``data`` to ``path`` (0600) through a temporary twin and ``os.replace``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
            fh.write(data)
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as err:
        raise OSError(err.errno, err.strerror, str(path)) from err  # the file meant, not its temporary twin
    finally:
        # On a read-only filesystem unlink fails with EROFS, not ENOENT: that must not hide the real error.
        with contextlib.suppress(OSError):
            tmp.unlink()


def check_writable(folder: Path) -> None:
    """Raise the storage error a first write into ``folder`` would meet when the nearest existing
    folder on the way to it cannot be written (nothing is created to find out)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        read_only = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
        code = errno.EROFS if read_only else errno.EACCES
        raise storage_error(OSError(code, os.strerror(code), str(folder)), folder)
