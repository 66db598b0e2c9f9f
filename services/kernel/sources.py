"""What may be read on the host to send to the model (attachments, images, instruction imports, ...).

A workspace file or link must not decide that a host file reaches the model: the agent can write
``link -> ~/.ssh/id_rsa`` or an AGENTS.md importing the user's MCP tokens. So every such read
resolves links first, and the real path must be inside the workspace or inside a directory the user
named for it (an ``@/abs/path`` they typed, the imports of their own global notes file). The config,
data, state and runtime dirs are never sources, except the user's own instructions file there by its
exact name. Pure apart from ``realpath``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from services.kernel.statedir import STATE_DIR


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def refusal(path: Path | str, workspace: Path | str, *, named: Sequence[Path | str] = (),
            private: Sequence[tuple[str, str]] = (), exact: Sequence[Path | str] = ()) -> str:
    """"" when ``path`` may be read to send to the model, else why not (one clause).

    ``named``: directories the user named for this read; ``private``: (what, where) pairs never read
    (the workspace's own state dir is always one); ``exact``: files allowed by their exact path even
    inside a private dir (the user's global instructions file)."""
    real = os.path.realpath(path)
    if any(real == os.path.realpath(e) for e in exact):
        return ""
    ws = os.path.realpath(workspace)
    for what, where in (*private, ("the workspace's ai-coding state", os.path.join(ws, STATE_DIR))):
        inner = os.path.realpath(where)
        # A private dir holding the whole workspace (a test's tmp dir) leaves the workspace's own files readable.
        if _inside(real, inner) and not (_inside(ws, inner) and _inside(real, ws)):
            return f"it resolves to {real}, inside {what} ({inner}), which is never sent to the model"
    if _inside(real, ws) or any(_inside(real, os.path.realpath(d)) for d in named):
        return ""
    return f"it resolves to {real}, outside the workspace ({ws})"


def named_dir(written: str, cwd: Path | str, workspace: Path | str) -> list[Path]:
    """The directory a user-typed path names when it lies outside the workspace as written (links
    not followed): ``@~/notes/a.md`` names ``~/notes``. A path written inside the workspace names
    nothing more: a link there must not lead out."""
    lexical = os.path.normpath(os.path.join(cwd, os.path.expanduser(written)))
    ws = os.path.normpath(os.path.abspath(workspace))
    if _inside(lexical, ws) or _inside(lexical, os.path.realpath(workspace)):
        return []
    return [Path(os.path.dirname(lexical))]
