"""The user's data directory ``$XDG_DATA_HOME/ai-coding`` (default ``~/.local/share/ai-coding``).

It holds what belongs to the user rather than to one workspace: MCP OAuth tokens and the skill
library. It is private: no workspace may contain it and sandboxed commands do not see it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/ai-coding``, else ``$HOME/.local/share/ai-coding``."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_DATA_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".local" / "share")
    return Path(base) / "ai-coding"
