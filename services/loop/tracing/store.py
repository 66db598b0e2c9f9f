"""The trace directory of a workspace: which sessions it holds, how old each is, pruning.

A session's age is the newest parseable ``ts`` in its own turn files, not the
directory's mtime: a copy without times kept (``rsync`` without ``-t``) makes every
session look new, and then ``--since`` shows all of them and ``prune`` never removes
anything. Only a session without one readable line falls back to the mtime.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.kernel.statedir import STATE_DIR

_TURN_FILE = re.compile(r"^turn-(\d+)\.jsonl$")
DAY_SECONDS = 86_400.0


class TraceNotFound(LookupError):
    """No trace directory for the session asked for (or the prefix is ambiguous)."""


@dataclass(frozen=True)
class Summary:
    """A session's ``summary.json``: its entries, or why there are none."""

    turns: list[dict[str, Any]] = field(default_factory=list)
    problem: str = ""
    """``""``, ``"missing"`` or ``"corrupt"``."""


@dataclass(frozen=True)
class SessionRef:
    """One session's trace directory."""

    session_id: str
    dir: Path
    turn_files: dict[int, Path]
    last_activity: float

    def summary(self) -> Summary:
        return read_summary(self.dir)

    def lines(self, turn: int) -> list[dict[str, Any]]:
        """Turn ``turn``'s events (unparseable lines skipped)."""
        return read_lines(self.turn_files[turn])


def traces_root(workspace: Path) -> Path:
    return workspace / STATE_DIR / "traces"


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file; a torn or foreign line is skipped, not fatal."""
    out: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    for raw in text.splitlines():
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append(item)
    return out


def read_summary(directory: Path) -> Summary:
    path = directory / "summary.json"
    if not path.exists():
        return Summary(problem="missing")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Summary(problem="corrupt")
    turns = data.get("turns") if isinstance(data, dict) else None
    if not isinstance(turns, list):
        return Summary(problem="corrupt")
    return Summary(turns=[t for t in turns if isinstance(t, dict)])


def _turn_files(directory: Path) -> dict[int, Path]:
    files: dict[int, Path] = {}
    for path in directory.iterdir():
        match = _TURN_FILE.match(path.name)
        if match and path.is_file():
            files[int(match.group(1))] = path
    return dict(sorted(files.items()))


def _last_ts(files: dict[int, Path]) -> float | None:
    """The newest ``ts`` among the files, reading from the newest turn backwards."""
    for number in sorted(files, reverse=True):
        for line in reversed(read_lines(files[number])):
            ts = line.get("ts")
            if isinstance(ts, int | float) and not isinstance(ts, bool):
                return float(ts)
    return None


def session_ref(directory: Path) -> SessionRef:
    """The trace directory of one session (which need not exist yet)."""
    files = _turn_files(directory) if directory.is_dir() else {}
    last = _last_ts(files)
    if last is None:
        last = directory.stat().st_mtime if directory.exists() else 0.0
    return SessionRef(directory.name, directory, files, last)


def sessions(workspace: Path) -> list[SessionRef]:
    """Every traced session of ``workspace``, newest activity first (ties by id)."""
    root = traces_root(workspace)
    if not root.is_dir():
        return []
    refs = [session_ref(directory) for directory in root.iterdir() if directory.is_dir()]
    return sorted(refs, key=lambda r: (-r.last_activity, r.session_id))


def find_session(workspace: Path, wanted: str) -> SessionRef:
    """The session whose id is ``wanted`` or starts with it (unique)."""
    refs = sessions(workspace)
    exact = [r for r in refs if r.session_id == wanted]
    matches = (exact or [r for r in refs if r.session_id.startswith(wanted)]) if wanted else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise TraceNotFound(f"no trace of a session {wanted!r} under {traces_root(workspace)}")
    raise TraceNotFound(f"{wanted!r} matches {len(matches)} traced sessions; give more of the id")


def older_than(refs: list[SessionRef], days: float, now: float) -> Iterator[SessionRef]:
    """The sessions whose last activity is more than ``days`` before ``now``."""
    cutoff = now - days * DAY_SECONDS
    return (r for r in refs if r.last_activity < cutoff)


def prune(refs: list[SessionRef]) -> list[str]:
    """Remove these sessions' trace directories; returns the ids removed."""
    removed = []
    for ref in refs:
        shutil.rmtree(ref.dir, ignore_errors=True)
        if not ref.dir.exists():
            removed.append(ref.session_id)
    return removed
