"""Git worktree isolation for a subagent child, the apply step, and the cleanup of orphans.

A child that may write, in a workspace inside a git repository, works in a
temporary worktree ``<workspace>/.ai-coding/worktrees/<run-id>`` on a new branch
``ai-coding/sub/<run-id>`` made from the parent's state at spawn time: HEAD plus
the parent's uncommitted changes to tracked files (``git stash create`` makes
that commit without touching the parent's tree or its stash list). Untracked
files of the parent are not carried over. The parent's tree is never touched
until the apply call.

When the child ends, everything it changed is committed on its branch (no hooks
run). No change: the worktree and the branch are removed. Changes: the packet
carries the diff stat, the branch and the worktree path, and ``subagent_apply``
applies the child's diff to the parent's tree with ``git apply`` (all or
nothing: a conflict applies no file and says which paths clash).

Each worktree has an owner file naming the loop's pid; a loop starting on the
workspace removes worktrees whose owner is gone (a crashed loop's), keeping the
branch when it holds commits (the child's finished work) and deleting it when
it does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from services.kernel.pids import pid_alive
from services.kernel.statedir import ensure_state_dir
from services.loop.core.errors import LoopError

WORKTREES_DIR = Path(".ai-coding") / "worktrees"
BRANCH_PREFIX = "ai-coding/sub/"
GIT_TIMEOUT_S = 60.0
# No user hooks, no signing, no pager, a fixed identity: our commits on the child's branch are plumbing.
_GIT_FLAGS = ("-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", "-c", "user.name=ai-coding subagent",
              "-c", "user.email=subagent@ai-coding.invalid")


class IsolationUnavailable(LoopError):
    """The child cannot have a worktree (no git, not a repository): it shares the workspace."""

    reason = "isolation_unavailable"


class ApplyRefused(LoopError):
    """The child's diff cannot be applied cleanly; ``paths`` are the clashing files."""

    reason = "apply_refused"

    def __init__(self, message: str, paths: list[str]) -> None:
        super().__init__(message)
        self.paths = paths


@dataclass
class Worktree:
    """A child's worktree: where it is, its branch, the commit it started from, and the repo."""

    run_id: str
    repo: Path
    path: Path
    branch: str
    base: str
    subdir: str = ""
    """The workspace's path inside the repository ("" at its top)."""

    @property
    def workspace(self) -> str:
        """The child's workspace: the worktree, at the same place in the tree as the parent's."""
        return str(self.path / self.subdir) if self.subdir else str(self.path)


@dataclass(frozen=True)
class Changes:
    """What a child's branch holds over its base."""

    files: list[str]
    stat: str


async def git(cwd: Path | str, *args: str, stdin: bytes | None = None, check: bool = True) -> tuple[int, str, str]:
    """Run git in ``cwd``; ``check``: a non-zero exit raises RuntimeError with git's message."""
    if shutil.which("git") is None:
        raise IsolationUnavailable("git is not installed")
    proc = await asyncio.create_subprocess_exec(
        "git", *_GIT_FLAGS, *args, cwd=str(cwd), stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "GIT_TERMINAL_PROMPT": "0",
                                                            "GIT_OPTIONAL_LOCKS": "0"})
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), GIT_TIMEOUT_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise RuntimeError(f"git {args[0]} did not finish within {GIT_TIMEOUT_S:g} s") from None
    code = proc.returncode or 0
    text, error = out.decode(errors="replace"), err.decode(errors="replace").strip()
    if check and code != 0:
        raise RuntimeError(f"git {args[0]} failed: {error or text.strip() or f'exit {code}'}")
    return code, text, error


async def create(workspace: str, run_id: str) -> Worktree:
    """A worktree for ``run_id`` from the parent's current state, or ``IsolationUnavailable``."""
    root = Path(workspace)
    code, top, err = await git(root, "rev-parse", "--show-toplevel", check=False)
    if code != 0:
        raise IsolationUnavailable(f"{workspace} is not in a git repository ({err or 'rev-parse failed'})")
    repo = Path(top.strip())
    code, head, _ = await git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False)
    if code != 0:
        raise IsolationUnavailable("the repository has no commit yet (nothing to branch from)")
    _, stash, _ = await git(repo, "stash", "create")
    base = stash.strip() or head.strip()
    ensure_state_dir(root)
    folder = root / WORKTREES_DIR
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / run_id
    branch = BRANCH_PREFIX + run_id
    (folder / f"{run_id}.owner").write_text(json.dumps({"pid": os.getpid(), "base": base, "repo": str(repo),
                                                        "branch": branch}), encoding="utf-8")
    try:
        await git(repo, "worktree", "add", "-q", "-b", branch, str(path), base)
    except RuntimeError as err:
        with contextlib.suppress(OSError):
            (folder / f"{run_id}.owner").unlink()
        raise IsolationUnavailable(str(err)) from None
    subdir = os.path.relpath(os.path.realpath(root), os.path.realpath(repo))
    return Worktree(run_id, repo, path, branch, base, "" if subdir == "." else subdir)


async def commit(tree: Worktree) -> Changes:
    """Commit everything the child changed on its branch; the files and diff stat against the base."""
    await git(tree.path, "add", "-A")
    code, _, _ = await git(tree.path, "diff", "--cached", "--quiet", check=False)
    if code != 0:
        await git(tree.path, "commit", "-q", "--no-verify", "-m", f"subagent {tree.run_id}")
    _, names, _ = await git(tree.path, "diff", "--name-only", tree.base, "HEAD")
    _, stat, _ = await git(tree.path, "diff", "--stat", tree.base, "HEAD")
    return Changes([n for n in names.splitlines() if n], stat.strip())


async def remove(tree: Worktree, keep_branch: bool = False) -> None:
    """Remove the worktree (and its branch unless ``keep_branch``) and its owner file."""
    await git(tree.repo, "worktree", "remove", "--force", str(tree.path), check=False)
    if tree.path.exists():
        shutil.rmtree(tree.path, ignore_errors=True)
        await git(tree.repo, "worktree", "prune", check=False)
    if not keep_branch:
        await git(tree.repo, "branch", "-q", "-D", tree.branch, check=False)
    with contextlib.suppress(OSError):
        (tree.path.parent / f"{tree.run_id}.owner").unlink()


async def apply(tree: Worktree) -> list[str]:
    """Apply the child's diff to the parent's tree (all or nothing); returns the files changed."""
    _, patch, _ = await git(tree.path, "diff", "--binary", tree.base, "HEAD")
    if not patch.strip():
        return []
    code, _, err = await git(tree.repo, "apply", "--check", "--whitespace=nowarn", stdin=patch.encode(), check=False)
    if code != 0:
        clashing = sorted({line.split(":")[1].strip() for line in err.splitlines()
                           if line.startswith("error:") and line.count(":") >= 2})
        raise ApplyRefused(f"the child's changes do not apply to your tree: {err.splitlines()[0] if err else ''}",
                           clashing)
    await git(tree.repo, "apply", "--whitespace=nowarn", stdin=patch.encode())
    _, names, _ = await git(tree.path, "diff", "--name-only", tree.base, "HEAD")
    return [n for n in names.splitlines() if n]


async def clean_orphans(workspace: str) -> list[str]:
    """Remove worktrees whose owning loop is gone; returns their run ids."""
    folder = Path(workspace) / WORKTREES_DIR
    if not folder.is_dir():
        return []
    removed: list[str] = []
    for owner in sorted(folder.glob("*.owner")):
        try:
            doc = json.loads(owner.read_text(encoding="utf-8"))
            pid, base, repo, branch = int(doc["pid"]), str(doc["base"]), Path(doc["repo"]), str(doc["branch"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if pid == os.getpid() or pid_alive(pid):
            continue
        tree = Worktree(owner.stem, repo, folder / owner.stem, branch, base)
        _, commits, _ = await git(repo, "rev-list", f"{base}..{branch}", check=False)
        await remove(tree, keep_branch=bool(commits.strip()))
        removed.append(owner.stem)
    return removed

