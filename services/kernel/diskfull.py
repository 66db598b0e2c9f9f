"""One sentence for a write that failed because a disk is full: which disk, which path, what to free."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_disk_full(err: BaseException) -> bool:
    """True for ENOSPC (no space) and EDQUOT (quota exceeded)."""
    return isinstance(err, OSError) and err.errno in FULL


def mount_point(path: Path) -> Path:
    """The mount point of the filesystem holding ``path`` (its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    probe = probe.resolve()
    while not os.path.ismount(probe) and probe != probe.parent:
        probe = probe.parent
    return probe


def disk_full_sentence(err: OSError, path: str | Path, what_to_free: str) -> str:
    """``"the disk holding PATH (mounted at M, N bytes free) is full (ENOSPC); free space there: ..."``."""
    target = Path(err.filename or path)
    mount = mount_point(target)
    try:
        free = f"{shutil.disk_usage(mount).free:,} bytes free"
    except OSError:
        free = "free space unknown"
    code = errno.errorcode.get(err.errno or 0, str(err.errno))
    return (f"the disk holding {target} (mounted at {mount}, {free}) is full ({code}); "
            f"free space there: {what_to_free}")


__all__ = ["FULL", "disk_full_sentence", "is_disk_full", "mount_point"]
