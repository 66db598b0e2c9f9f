"""The per-workspace state directory ``<workspace>/.ai-coding`` (sessions, traces, memory).

Created private (0700: it holds conversations and notes) and with a ``.gitignore``
of ``*`` in it, so nothing the agent keeps ends up in a commit by accident. A
directory the user made themselves is left as it is.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

STATE_DIR = ".ai-coding"


def ensure_state_dir(workspace: str | Path) -> Path:
    """``<workspace>/.ai-coding``, created (0700, with its ``.gitignore``) when missing."""
    state = Path(workspace) / STATE_DIR
    if not state.is_dir():
        with contextlib.suppress(FileExistsError):
            state.mkdir(mode=0o700)
            # Only in a directory we just made: a user who removed it meant to keep these files.
            with contextlib.suppress(OSError):
                fd = os.open(state / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as fh:
                    fh.write("# ai-coding's sessions, traces and memory: private to this checkout\n*\n")
    return state
