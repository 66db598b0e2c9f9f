"""A cheap fingerprint of every file the loader reads, so an unchanged config is not reloaded."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from services.kernel.config.layer_io import PROJECT_FILES
from services.kernel.trust import store_path


def _file_stamp(path: str) -> tuple[int, int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode, st.st_uid)


def layer_stamp(workspace: Path | None, user_path: Path | None) -> tuple[Any, ...]:
    """What :func:`load_config` read, as cheap ``stat`` results: it differs when a config file
    was created, edited, removed or re-permissioned (the user file and every project-file
    candidate upward from ``workspace``), so a caller can skip reloading an unchanged config."""
    stamps: list[Any] = [_file_stamp(str(user_path)) if user_path is not None else None,
                         _file_stamp(str(store_path()))]
    if workspace is not None:
        # The same walk as find_project_files, on strings: this runs at every OpenSession.
        current = os.path.realpath(workspace)
        home = os.path.realpath(Path.home())
        directory = current
        while True:
            if directory == home and directory != current:
                break
            stamps.extend(_file_stamp(os.path.join(directory, name)) for name in PROJECT_FILES)
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
    return tuple(stamps)

