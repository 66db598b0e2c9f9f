"""What a Claude Code or Codex user types: ``-p/--print``, ``-c/--continue``, ``-r/--resume [ID]``,
a prompt from stdin, and the git root as the default workspace.

Pure functions over argv, paths and session rows; stdlib only (this runs on every command line).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import field
from pathlib import Path
from typing import TextIO

from clients.cli.session_rows import SessionLike
from services.kernel.records import record

PRINT_FLAGS = ("-p", "--print")
# Root options that take a value: what follows them is not a prompt.
VALUED_ROOT_FLAGS = ("-r", "--resume", "-w", "--workspace", "--session", "--skills")
# Where a positional prompt before any command goes (``ai-coding "fix the bug"``).
FIRST_MESSAGE_FLAG = "--first-message"
RESUME_FLAGS = ("-r", "--resume")
ROOT_ONLY_FLAGS = ("--skills",)
# What a bare ``-r``/``--resume`` (no id after it) becomes: "show me the sessions to pick from".
PICK = "@list"
STDIN_PROMPT = "-"


def rewrite_argv(args: Sequence[str], commands: Sequence[str]) -> list[str]:
    """``-p PROMPT ...`` before any command means ``run PROMPT ...``; a bare ``-r``/``--resume``
    (at the end, or followed by another option) means ``--resume @list``."""
    out = list(args)
    first_command = next((n for n, a in enumerate(out) if a in commands), len(out))
    flag = next((n for n, a in enumerate(out[:first_command]) if a in PRINT_FLAGS), None)
    if flag is not None:
        before = out[:flag]
        root_only = []  # root options `run` does not take stay in front of it
        while ROOT_ONLY_FLAGS and before[:1] and before[0] in ROOT_ONLY_FLAGS and len(before) > 1:
            root_only += before[:2]
            before = before[2:]
        out = [*root_only, "run", *before, *out[flag + 1:]]
    for n, arg in enumerate(out):
        if arg in RESUME_FLAGS and (n + 1 == len(out) or out[n + 1].startswith("-")):
            out[n] = f"--resume={PICK}"
    return out


def lift_prompt(args: Sequence[str], commands: Sequence[str]) -> list[str]:
    """``ai-coding "fix the bug"``, ``ai-coding -c "now the tests"``, ``ai-coding -r ID "go on"``: the
    first word that is neither an option, an option's value nor a command starts the interactive
    session as its first message (as Claude Code reads it); the words after it up to the next option
    join it. A command's name wins (``ai-coding status`` is the command)."""
    out = list(args)
    n = 0
    while n < len(out):
        arg = out[n]
        if arg == "--" or arg in commands:
            return out
        if arg.startswith("-") and arg != STDIN_PROMPT:
            n += 2 if arg in VALUED_ROOT_FLAGS else 1
            continue
        end = n
        while end < len(out) and not out[end].startswith("-"):
            end += 1
        return [*out[:n], f"{FIRST_MESSAGE_FLAG}={' '.join(out[n:end])}", *out[end:]]
    return out


def is_repository(directory: Path) -> bool:
    """``directory`` holds a git repository: a ``.git`` folder with a ``HEAD``, or a worktree's
    ``.git`` file pointing at one (an empty or stray ``.git`` folder is not a repository, as git says)."""
    marker = directory / ".git"
    try:
        if marker.is_dir():
            return (marker / "HEAD").is_file()
        return marker.is_file() and marker.read_text(errors="replace").startswith("gitdir:")
    except OSError:
        return False


def _ceilings() -> set[Path]:
    """``GIT_CEILING_DIRECTORIES``: the search stops below these, as git's own does."""
    listed = os.environ.get("GIT_CEILING_DIRECTORIES", "")
    return {Path(entry).resolve() for entry in listed.split(os.pathsep) if entry}


def git_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding a repository (or a worktree), below the
    user's home: a dotfiles repository in ``~`` does not make home the workspace."""
    current = start.resolve()
    home = Path(os.path.expanduser("~")).resolve()
    ceilings = _ceilings()
    for directory in (current, *current.parents):
        if directory == home or (directory in home.parents and current != directory):
            return None
        if directory in ceilings and directory != current:
            return None
        if is_repository(directory):
            return directory
    return None


def default_workspace(cwd: Path | None = None) -> Path:
    """The git root when ``cwd`` is inside a repository, else ``cwd`` itself (as Claude Code and
    Codex treat the project)."""
    here = (cwd or Path(os.getcwd())).resolve()
    return git_root(here) or here


def workspace_and_cwd(given: str) -> tuple[Path, Path]:
    """``(workspace root, where the user is)``: ``-w`` when given, else the default workspace; the
    working directory counts only when it is inside that root (else the root stands for it)."""
    here = Path(os.getcwd()).resolve()
    root = Path(given).expanduser().resolve() if given else default_workspace(here)
    return root, here if here.is_relative_to(root) else root


@record
class SessionChoice:
    """Which session a turn runs in: ``session_id`` ("" = a new one), or why none was picked
    (``problem``, with the ``candidates`` to show)."""

    session_id: str = ""
    note: str = ""
    problem: str = ""
    candidates: list[SessionLike] = field(default_factory=list)


def choose_session(rows: Sequence[SessionLike], *, continue_last: bool, resume: str) -> SessionChoice:
    """``--continue``: the newest session of the workspace (rows are newest first); ``--resume ID``:
    the one session equal to or starting with ID; several matches list them instead of picking."""
    if continue_last and resume:
        return SessionChoice(problem="--continue and --resume both name a session; pass one of them")
    if continue_last:
        if not rows:
            return SessionChoice(note="no earlier session in this workspace; starting a new one")
        return SessionChoice(session_id=rows[0].session_id)
    if not resume:
        return SessionChoice()
    if resume == PICK:
        if not rows:
            return SessionChoice(problem="no saved sessions in this workspace to resume")
        return SessionChoice(problem="pick a session: pass its id (or a unique prefix) to --resume",
                             candidates=list(rows))
    exact = [r for r in rows if r.session_id == resume]
    matches = exact or [r for r in rows if r.session_id.startswith(resume)]
    if len(matches) == 1:
        return SessionChoice(session_id=matches[0].session_id)
    if not matches:
        return SessionChoice(problem=f"no session {resume!r} in this workspace; `ai-coding sessions list` shows them")
    return SessionChoice(problem=f"{resume!r} matches {len(matches)} sessions; pass more of the id",
                         candidates=matches)


def read_prompt(prompt: str, stdin: TextIO) -> str:
    """The prompt: ``-`` (or nothing, when stdin is not a terminal) reads it from stdin (bytes that are
    not UTF-8 kept as surrogate escapes, for ``not_utf8`` to name)."""
    if prompt == STDIN_PROMPT or (not prompt and not stdin.isatty()):
        raw = getattr(stdin, "buffer", None)
        return raw.read().decode("utf-8", "surrogateescape") if raw is not None else stdin.read()
    return prompt


def not_utf8(text: str, where: str = "the prompt") -> str:
    """Why ``text`` cannot be sent (bytes that are not UTF-8, from stdin or argv), or ""."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        bad = text[err.start]
        byte = f"byte 0x{ord(bad) - 0xDC00:02x}" if 0xDC80 <= ord(bad) <= 0xDCFF else f"U+{ord(bad):04X}"
        return (f"{where} is not UTF-8 text ({byte} at character {err.start:,}); convert it first, "
                "e.g. `iconv -f latin1 -t utf-8`")
    return ""
