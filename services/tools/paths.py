"""Path checks: every path a file tool touches is resolved here (symlinks
included) and refused when it leaves the session's roots."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Sequence
from pathlib import Path

from services.kernel.statedir import STATE_DIR
from services.kernel.workspace import WorkspaceRefused, workspace_root
from services.tools.errors import ToolError, WorkspaceError


def check_workspace_root(raw: str, home: Path, private: Sequence[tuple[str, str]] = ()) -> Path:
    """:func:`services.kernel.workspace.workspace_root`, refusing with :class:`WorkspaceError`."""
    try:
        return workspace_root(raw, home, private)
    except WorkspaceRefused as exc:
        raise WorkspaceError(exc.message, hint=exc.hint) from None


def is_inside(path: Path, roots: Sequence[Path]) -> bool:
    """True when the (already real) ``path`` is one of ``roots`` or below one."""
    return any(path == root or path.is_relative_to(root) for root in roots)


def resolve_path(raw: str, roots: Sequence[Path]) -> Path:
    """The real path for ``raw`` (relative to the first root), refused if it leaves every root.

    ``..``, absolute paths and symlinks (even ones created a moment ago) are all
    resolved before the check, so the returned path is the one to open.
    """
    if not raw or "\0" in raw:
        raise ToolError("invalid_arguments", "the path is empty or contains a NUL byte", "Pass a file path.")
    candidate = Path(raw).expanduser() if raw == "~" or raw.startswith("~/") else Path(raw)
    if not candidate.is_absolute():
        candidate = roots[0] / candidate
    try:
        real = Path(os.path.realpath(candidate))
    except OSError:  # a component changed between realpath's lstat and readlink
        raise ToolError("path_changed", f"{raw} changed while it was being resolved",
                        "Something is modifying this path right now; try again when it is settled.") from None
    if not is_inside(real, roots):
        shown = ", ".join(str(r) for r in roots)
        raise ToolError(
            "path_outside_workspace",
            f"{raw} resolves to {real}, which is outside the workspace ({shown})",
            "Use a path inside the workspace; symlinks and `..` that leave it are refused.",
        )
    return real


def display_path(path: Path, roots: Sequence[Path]) -> str:
    """``path`` relative to the first root that holds it (absolute otherwise)."""
    for root in roots:
        if path == root:
            return "."
        if path.is_relative_to(root):
            return str(path.relative_to(root))
    return str(path)


PROTECTED_NAMES = {
    ".git": "git runs what its control files say, outside any sandbox",
    STATE_DIR: "the services load and trust the workspace state (sessions, traces, memory)",
}


def check_not_protected(path: Path, roots: Sequence[Path]) -> None:
    """Refuse writes into any ``.git`` (a repository's control data, a ``gitdir:`` file, a submodule's)
    or any ``.ai-coding`` (workspace state) below a root: bash sees them read-only for the same reason."""
    root = _root_of(path, roots)
    for part in path.relative_to(root).parts:
        why = PROTECTED_NAMES.get(part)
        if why:
            raise ToolError("protected_path", f"{display_path(path, roots)} is protected: {why}",
                            "Leave it to the user (git commands, ai-coding itself); write elsewhere.")


def _escape_error(shown: str, real: str, roots: Sequence[Path]) -> ToolError:
    return ToolError("path_outside_workspace",
                     f"{shown} changed into a link to {real}, which is outside the workspace "
                     f"({', '.join(str(r) for r in roots)})",
                     "Use a path inside the workspace; symlinks that leave it are refused.")


def verify_fd_inside(fd: int, shown: str, roots: Sequence[Path]) -> None:
    """Check what an open descriptor really points at: a symlink swapped in after
    :func:`resolve_path` (by a background job, say) is caught here."""
    real = os.readlink(f"/proc/self/fd/{fd}")
    if not is_inside(Path(real), roots):
        os.close(fd)
        raise _escape_error(shown, real, roots)


DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _root_of(path: Path, roots: Sequence[Path]) -> Path:
    """The deepest root holding ``path`` (an extra root may sit inside the first one)."""
    holding = [root for root in roots if path == root or path.is_relative_to(root)]
    if not holding:
        raise _escape_error(str(path), str(path), roots)
    return max(holding, key=lambda root: len(root.parts))


def open_parent_dir(path: Path, roots: Sequence[Path], shown: str, create: bool) -> tuple[int, str]:
    """A descriptor of ``path``'s parent directory and the final name, reached from the root one
    component at a time with ``O_NOFOLLOW`` (``create``: missing directories are made with
    ``mkdirat`` on the descriptor of their parent). No step goes by path after a check, so a
    directory swapped for a symlink at any moment makes the call fail instead of leaving the
    workspace. The caller closes the descriptor."""
    root = _root_of(path, roots)
    parts = path.relative_to(root).parts
    if not parts:
        raise ToolError("not_a_file", f"{shown} is a directory", "Pick a file path.")
    fd = os.open(root, DIR_FLAGS)
    try:
        for n, part in enumerate(parts[:-1]):
            try:
                child = _open_dir_at(fd, part, create)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EEXIST):
                    raise
                raise ToolError("path_outside_workspace",
                                f"{shown}: {Path(*parts[: n + 1])} is a symlink or not a directory (it may have "
                                "been swapped a moment ago); nothing was written",
                                "Write below real directories of the workspace; links are not followed "
                                "when writing.") from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _open_dir_at(parent: int, name: str, create: bool) -> int:
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o777, dir_fd=parent)
    return os.open(name, DIR_FLAGS, dir_fd=parent)


def read_inside(path: Path, shown: str, roots: Sequence[Path]) -> bytes:
    """The bytes of ``path``, opened without following a final symlink and verified after opening."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    verify_fd_inside(fd, shown, roots)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()
