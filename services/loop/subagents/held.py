"""What ``subagent_apply`` does not carry into the parent's tree unseen (pure decisions + git reads).

A child's branch may hold a symbolic link whose target leaves the workspace (``key -> ~/.ssh/id_rsa``,
a link to a host folder): harmless to the file tools, but the user's next ``@key`` or a host program
would follow it. And a ``.gitmodules`` decides what git fetches and runs. Both are held back: the
rest applies, the held paths stay on the child's branch (kept), and the result names each one with
why and the git command that shows it, so the user sees them before anything follows them.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from services.loop.subagents import worktree
from services.loop.subagents.worktree import Worktree

LINK_MODE = "120000"
GITMODULES = ".gitmodules"

Git = Callable[..., Awaitable[tuple[int, str, str]]]


@dataclass(frozen=True)
class Held:
    """A path of the child's diff not applied, and why."""

    path: str
    why: str


def inside(target: str, root: str) -> bool:
    return target == root or target.startswith(root.rstrip("/") + "/")


def link_leaves(root: str, path: str, target: str, boundary: str = "") -> bool:
    """Whether a link at ``root/path`` (``path`` relative to the repository ``root``) pointing at
    ``target`` resolves outside ``boundary`` (default ``root``; links already in the parent's tree on
    the way are followed)."""
    real_root = os.path.realpath(root)
    joined = target if os.path.isabs(target) else os.path.join(real_root, os.path.dirname(path), target)
    return not inside(os.path.realpath(os.path.normpath(joined)), os.path.realpath(boundary or root))


def parse_raw(raw: str) -> list[tuple[str, str, str]]:
    """``git diff --raw -z`` as (new mode, new blob, path) for each added or changed entry."""
    fields = raw.split("\0")
    out: list[tuple[str, str, str]] = []
    i = 0
    while i < len(fields) - 1:
        head = fields[i]
        if not head.startswith(":"):
            i += 1
            continue
        parts = head[1:].split()
        status = parts[4] if len(parts) > 4 else ""
        paths = 2 if status[:1] in ("R", "C") else 1
        path = fields[i + paths]
        if status[:1] != "D" and len(parts) >= 4:
            out.append((parts[1], parts[3], path))
        i += 1 + paths
    return out


async def held_back(git: Git, tree_path: str, repo: str, base: str, workspace: str = "") -> list[Held]:
    """The child's added or changed entries that must not be applied unseen (``workspace``: the
    parent's, inside ``repo``; default the repository)."""
    _, raw, _ = await git(tree_path, "diff", "--ignore-submodules=all", "--no-renames", "--raw", "-z",
                          "--no-abbrev", base, "HEAD")
    held: list[Held] = []
    for mode, blob, path in parse_raw(raw):
        if path == GITMODULES or path.endswith("/" + GITMODULES):
            held.append(Held(path, "it decides what git fetches and runs in your tree"))
        elif mode == LINK_MODE:
            _, target, _ = await git(tree_path, "cat-file", "blob", blob)
            if link_leaves(repo, path, target, workspace):
                held.append(Held(path, f"a link to {target}, outside the workspace"))
    return held


async def apply_holding_back(tree: Worktree) -> tuple[list[str], list[Held]]:
    """Apply the child's diff except what is held back: (the files applied, what was held)."""
    held = await held_back(worktree.git, str(tree.path), str(tree.repo), tree.base, str(tree.repo / tree.subdir))
    return await worktree.apply(tree, tuple(h.path for h in held)), held


def held_note(held: list[Held], branch: str, base: str) -> str:
    """The sentence the result (and so the user) gets about what was held back."""
    if not held:
        return ""
    listed = "; ".join(f"{h.path} ({h.why})" for h in held)
    paths = " ".join(h.path for h in held)
    return (f" Not applied, for the user to review: {listed}. They stay on branch {branch} "
            f"(`git diff {base[:12]} {branch} -- {paths}`); the user applies them by hand if wanted.")
