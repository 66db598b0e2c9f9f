"""Decisions of ``ai-coding mcp serve`` as pure functions: which permission mode a caller gets,
which workspace a task may run in, what a turn event says as progress, which files a turn changed.

Stdlib and the client's view models only (no ``mcp``, no grpc): the unit tests call these directly.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from clients.cli import views


class Mode(enum.IntEnum):
    """The loop's permission modes (``/permissions``), ordered from the least to the most allowed."""

    READONLY = 0
    CONFIRM = 1
    AUTO = 2

    @property
    def label(self) -> str:
        return self.name.lower()


MODE_NAMES = tuple(m.label for m in Mode)


class TaskInputError(ValueError):
    """A task argument that cannot be used; the message says what to pass instead."""


def parse_mode(text: str, what: str) -> Mode:
    """``readonly`` / ``confirm`` / ``auto`` (any case) as a :class:`Mode`."""
    wanted = text.strip().lower()
    for mode in Mode:
        if mode.label == wanted:
            return mode
    raise TaskInputError(f"{what} {text!r} is not a permission mode; use one of: {', '.join(MODE_NAMES)}")


@dataclass(frozen=True)
class Grant:
    """The mode a task runs in, and a sentence when it is lower than the caller asked for."""

    mode: Mode
    note: str = ""


def grant_mode(requested: str, ceiling: Mode) -> Grant:
    """The caller's mode, never above the user's ``ceiling`` (``--permission-mode`` of the server);
    an empty request gets the ceiling itself."""
    if not requested.strip():
        return Grant(ceiling)
    asked = parse_mode(requested, "permission_mode")
    if asked <= ceiling:
        return Grant(asked)
    return Grant(ceiling, f"asked for permission_mode {asked.label}; the user allows at most {ceiling.label} "
                          f"(`ai-coding mcp serve --permission-mode`), so the task ran in {ceiling.label}")


@dataclass(frozen=True)
class Place:
    """Where a task runs: the workspace root and the directory inside it the caller named."""

    root: Path
    cwd: Path


def place_task(requested: str, roots: Sequence[Path]) -> Place:
    """The allowed workspace root holding ``requested`` (an absolute path, or relative to the first
    root; empty = the first root). Anything outside every root is refused: the caller cannot reach
    a directory the user did not hand to the server."""
    if not roots:
        raise TaskInputError("this server was started without a workspace; start it with `-w DIR`")
    given = Path(requested).expanduser() if requested.strip() else roots[0]
    target = (given if given.is_absolute() else roots[0] / given).resolve()
    for root in roots:
        if target.is_relative_to(root):
            if not target.is_dir():
                raise TaskInputError(f"workspace {requested!r} is not a directory inside {root}; pass an existing one")
            return Place(root, target)
    allowed = ", ".join(str(r) for r in roots)
    raise TaskInputError(f"workspace {requested!r} is outside what this server may use ({allowed}); the user "
                         "can allow it by starting `ai-coding mcp serve -w DIR`")


def progress_message(event: views.Event) -> str | None:
    """One line for a turn event worth a progress notification (None: not worth one, such as text
    deltas, which arrive token by token and end up in the result)."""
    body = event.body
    if isinstance(body, views.TurnStarted):
        return f"turn {body.turn} started" + (f" on {body.model}" if body.model else "")
    if isinstance(body, views.ToolStarted):
        return f"running {body.tool}: {body.title or _short(body.arguments_json)}"
    if isinstance(body, views.ToolFinished):
        result = body.result
        if result.ok:
            return f"{result.tool} done"
        return f"{result.tool} failed: {result.error.message or result.error.code or 'error'}"
    if isinstance(body, views.ApprovalRequested):
        return f"approval needed for {body.tool}: {body.reason or _short(body.arguments_json)}"
    if isinstance(body, views.ApprovalResolved):
        return f"approval {body.decision.name.lower()}"
    if isinstance(body, views.ModelStepFinished):
        return f"model step {body.step} finished"
    if isinstance(body, views.CompactionStarted):
        return "compacting the conversation"
    if isinstance(body, views.Notice):
        return body.text
    if isinstance(body, views.Degraded):
        return f"degraded ({body.component}): {body.reason}"
    if isinstance(body, views.TurnFinished):
        return f"turn finished: {body.status.name.lower()}"
    return None


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# Directories a changed-files scan does not enter: VCS data, the agent's own state, dependencies.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".ai-coding", "node_modules", ".venv", "venv", "__pycache__",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"})
SCAN_LIMIT = 50_000

Snapshot = Mapping[str, tuple[int, int]]


@dataclass(frozen=True)
class Scan:
    """``path -> (mtime_ns, size)`` of the workspace's files, and whether the scan stopped at its limit."""

    files: Snapshot
    complete: bool = True


def scan(root: Path, limit: int = SCAN_LIMIT) -> Scan:
    """The files under ``root`` (relative paths), skipping :data:`SKIP_DIRS`, at most ``limit``."""
    files: dict[str, tuple[int, int]] = {}
    pending = [root]
    while pending:
        directory = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_DIRS:
                        pending.append(Path(entry.path))
                    continue
                stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            files[os.path.relpath(entry.path, root)] = (stat.st_mtime_ns, stat.st_size)
            if len(files) >= limit:
                return Scan(files, complete=False)
    return Scan(files)


@dataclass(frozen=True)
class Change:
    path: str
    kind: str
    """``added``, ``modified`` or ``deleted``."""


def changed_files(before: Snapshot, after: Snapshot) -> list[Change]:
    """What differs between two scans, sorted by path."""
    out = [Change(p, "added") for p in after if p not in before]
    out += [Change(p, "deleted") for p in before if p not in after]
    out += [Change(p, "modified") for p, seen in after.items() if p in before and before[p] != seen]
    return sorted(out, key=lambda c: c.path)


@dataclass(frozen=True)
class TaskReport:
    """What a finished task hands back to the caller."""

    status: str
    text: str
    session_id: str
    mode: Mode
    changes: Sequence[Change] = ()
    notes: Sequence[str] = ()
    scan_complete: bool = True

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    def structured(self) -> dict[str, object]:
        return {"status": self.status, "text": self.text, "session_id": self.session_id,
                "permission_mode": self.mode.label,
                "changed_files": [{"path": c.path, "change": c.kind} for c in self.changes],
                "changed_files_complete": self.scan_complete, "notes": list(self.notes)}

    def summary(self) -> str:
        """The result's text: the agent's answer, then the changed files and any notes."""
        lines = [self.text.strip() or f"(the turn ended {self.status} with no answer)"]
        if self.changes:
            lines += ["", "changed files:", *(f"  {c.kind:<8} {c.path}" for c in self.changes)]
        if not self.scan_complete:
            lines.append(f"(only the first {SCAN_LIMIT:,} files of the workspace were checked for changes)")
        if not self.ok:
            lines.append(f"status: {self.status}")
        lines += [f"note: {n}" for n in self.notes]
        lines.append(f"session: {self.session_id} (pass it as session_id to continue)")
        return "\n".join(lines)


def status_name(finished: views.TurnFinished | None, fallback: str) -> str:
    """``completed``, ``interrupted``, ... from the turn's final event (``fallback`` without one)."""
    if finished is None:
        return fallback
    return finished.status.name.lower()

