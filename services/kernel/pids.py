"""Whether a process is alive, shared by the client's supervisor and the loop's crash cleanup."""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"
