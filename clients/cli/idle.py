"""When the supervisor stops the services by itself: after ``supervisor.idle_seconds`` with no client,
no running turn, no background child and no running command or job (``ai-coding up --stay`` keeps
them). Pure decisions first; the facts come from :mod:`services.kernel.activity` and ``/proc``.
"""

from __future__ import annotations

from pathlib import Path

STAY_FILE = "stay"
"""``<runtime>/stay``: written by ``ai-coding up --stay``, removed by ``ai-coding down``."""

CHECK_EVERY_SECONDS = 1.0


def idle_expired(now: float, last_busy: float, idle_seconds: float, stay: bool) -> bool:
    """True when nothing has kept the services busy for ``idle_seconds`` (0 = never stop)."""
    return not stay and idle_seconds > 0 and now - last_busy >= idle_seconds


def stays(rdir: Path) -> bool:
    """Whether ``ai-coding up --stay`` asked for resident services."""
    return (rdir / STAY_FILE).exists()


def set_stay(rdir: Path, on: bool) -> None:
    path = rdir / STAY_FILE
    if on:
        path.touch(mode=0o600, exist_ok=True)
    else:
        path.unlink(missing_ok=True)
