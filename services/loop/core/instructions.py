"""Project instructions: the user's global AGENTS.md, then AGENTS.md and CLAUDE.md in every
directory from the workspace root down to where the user is, with ``@path`` imports.

What Claude Code and Codex users already keep in their repositories works unchanged:

- both names are read in each directory (AGENTS.md first), the nearer directory later, so a
  subfolder's notes refine the root's;
- ``@path`` in a notes file (outside code) imports that file, resolved against the importing
  file's directory (``@~/...`` against home), at most ``MAX_IMPORT_DEPTH`` hops deep; a file
  already included is not included again, so an import cycle ends by itself;
- every file, an import or a symlink alike, must resolve inside the workspace or the user's
  config directory: a repository cannot make the loop send ``~/.ssh/id_rsa`` to the model;
- the whole text is bounded (``MAX_NOTES_CHARS``); it is paid on every step.

The result is fixed for the life of a session (it is part of the stable request prefix).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

NOTE_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_NOTES_CHARS = 16_000
MAX_IMPORT_DEPTH = 5
TRUNCATED = "\n[... project notes truncated]"

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_IMPORT = re.compile(r"(?<![\w@`])@((?:~/|\.{1,2}/|/)?[\w][\w.\-/]*)")


@dataclass(frozen=True)
class NoteFile:
    """One instructions file as it goes into the request."""

    label: str
    """Its path relative to the workspace (``pkg/CLAUDE.md``), or ``~/...`` for the user's."""
    text: str
    imported_by: str = ""


def user_notes_path(user_config: Path) -> Path:
    """The global file: AGENTS.md beside the user config (``~/.config/ai-coding/AGENTS.md``)."""
    return user_config.parent / "AGENTS.md"


def directories(workspace: Path, cwd: Path | None) -> list[Path]:
    """The workspace root, then each directory down to ``cwd`` (only the root when ``cwd`` is
    outside the workspace or not given)."""
    root = workspace.resolve()
    here = cwd.resolve() if cwd is not None else root
    if here == root or not here.is_relative_to(root):
        return [root]
    parts = here.relative_to(root).parts
    return [root, *(root.joinpath(*parts[:n]) for n in range(1, len(parts) + 1))]


def imports_in(text: str) -> list[str]:
    """The ``@path`` references of a notes file, outside fenced and inline code, in order."""
    prose = _INLINE_CODE.sub("", _FENCE.sub("", text))
    return [m.group(1).rstrip(".") for m in _IMPORT.finditer(prose)]


class _Reader:
    def __init__(self, workspace: Path, user_dir: Path) -> None:
        self.workspace = workspace.resolve()
        self.user_dir = user_dir.resolve()
        self.seen: set[Path] = set()
        self.files: list[NoteFile] = []

    def allowed(self, real: Path) -> bool:
        return real.is_relative_to(self.workspace) or real.is_relative_to(self.user_dir)

    def label(self, path: Path) -> str:
        if path.is_relative_to(self.workspace):
            return str(path.relative_to(self.workspace))
        home = Path(os.path.expanduser("~")).resolve()
        return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)

    def add(self, path: Path, imported_by: str = "", depth: int = 0) -> None:
        real = Path(os.path.realpath(path))
        if real in self.seen or not real.is_file() or not self.allowed(real):
            return
        try:
            text = real.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        self.seen.add(real)
        label = self.label(Path(os.path.normpath(path)))
        self.files.append(NoteFile(label, text, imported_by))
        if depth >= MAX_IMPORT_DEPTH:
            return
        for ref in imports_in(text):
            target = Path(os.path.expanduser(ref)) if ref.startswith("~/") else path.parent / ref
            self.add(target, label, depth + 1)


def load_notes(workspace: Path, cwd: Path | None, user_dir: Path) -> list[NoteFile]:
    """Every instructions file for a session, in the order they go into the request."""
    reader = _Reader(workspace, user_dir)
    reader.add(user_notes_path(user_dir / "config.yaml"))
    for directory in directories(workspace, cwd):
        for name in NOTE_FILES:
            reader.add(directory / name)
    return reader.files


def render_notes(files: Sequence[NoteFile], limit: int = MAX_NOTES_CHARS) -> str:
    """The ``<project-notes>`` blocks for the system message, cut at ``limit`` characters overall."""
    blocks: list[str] = []
    left = limit
    for note in files:
        body = note.text.strip()
        if not body:
            continue
        if left <= 0:
            blocks.append(f"<project-notes file=\"{note.label}\">{TRUNCATED.strip()}</project-notes>")
            continue
        if len(body) > left:
            body = body[:left] + TRUNCATED
        left -= len(body)
        via = f" imported-by=\"{note.imported_by}\"" if note.imported_by else ""
        blocks.append(f"<project-notes file=\"{note.label}\"{via}>\n{body}\n</project-notes>")
    return "\n\n".join(blocks)
