"""Starting a host process where the agent may have planted files (services/kernel).

Hooks, the static check's linters, git on a child's worktree and stdio MCP servers run on the host,
outside the sandbox, often with the workspace as their working directory. What the agent wrote
there must not be picked up implicitly:

- ``PYTHONSAFEPATH=1``: ``python3 -c ...`` / ``python3 -m ...`` do not put the working directory on
  ``sys.path``, so a planted ``json.py`` is not imported instead of the standard library's;
  ``PYTHONPATH``, ``PYTHONSTARTUP``, ``PYTHONHOME``, ``PYTHONUSERBASE`` are never passed on;
- ``PATH`` without empty, ``.`` or relative entries and without any directory inside the workspace,
  so a planted ``./jq`` or ``.venv/bin/python`` is not found by name (``safe_path``);
- git with the workspace's executable configuration neutralised (``GIT_SAFE_FLAGS``, ``git_env``).

A host process a service keeps running (a stdio MCP server) is started through
:func:`dies_with_parent`, so it cannot outlive a service killed with SIGKILL.

What a hook author must still know is in docs/hooks.md ("What a hook runs").
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

PYTHON_DROPPED = ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONINSPECT",
                  "PYTHONBREAKPOINT")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"

# Every git the loop runs on a tree a child controlled: no hooks, no fsmonitor, no external diff,
# no textconv, submodules neither entered nor read (a hostile .gitmodules makes git die), no pager.
GIT_SAFE_FLAGS: tuple[str, ...] = (
    "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "diff.external=",
    "-c", "submodule.recurse=false", "-c", "diff.ignoreSubmodules=all", "-c", "status.submoduleSummary=false",
    "-c", "core.pager=cat", "-c", "commit.gpgsign=false", "-c", "protocol.file.allow=never",
)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def safe_path(path: str, workspace: str = "") -> str:
    """``path`` without empty, ``.``, relative or in-workspace entries (the default when nothing is left)."""
    root = os.path.realpath(workspace) if workspace else ""
    kept: list[str] = []
    for entry in path.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if root and (_inside(real, root) or _inside(os.path.normpath(entry), root)):
            continue
        if entry not in kept:
            kept.append(entry)
    return os.pathsep.join(kept) or DEFAULT_PATH


def safe_env(env: Mapping[str, str], workspace: str = "") -> dict[str, str]:
    """``env`` made safe to start a host process in ``workspace`` (see the module doc)."""
    out = {k: v for k, v in env.items() if k not in PYTHON_DROPPED}
    out["PATH"] = safe_path(env.get("PATH", DEFAULT_PATH), workspace)
    out["PYTHONSAFEPATH"] = "1"
    return out


def git_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment for git on a child's tree: no system or global config (no filter, textconv or
    diff drivers the tree's attributes could select), no prompts, no optional locks."""
    out = safe_env(env)
    out.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0",
                "GIT_OPTIONAL_LOCKS": "0", "GIT_ATTR_NOSYSTEM": "1"})
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
                 "GIT_CONFIG_COUNT", "GIT_EXTERNAL_DIFF", "GIT_EXEC_PATH"):
        out.pop(name, None)
    return out


# Runs as `python -S -I -c _LAUNCH PARENT_PID PROGRAM ARGS...`: asks the kernel for SIGKILL when its
# parent dies (PR_SET_PDEATHSIG = 1; kept across exec), checks the parent did not die before that,
# then becomes PROGRAM (same pid, found on the PATH it was given, as any spawn would find it).
_LAUNCH = """import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)
if os.getppid() != int(sys.argv[1]):
    os._exit(1)
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    sys.stderr.write(f"cannot start {sys.argv[2]}: {exc.strerror}\\n")
    os._exit(127)
"""


def dies_with_parent(argv: Sequence[str]) -> list[str]:
    """``argv`` behind a launcher that has the kernel SIGKILL it when the process that spawns it
    dies, however that process ends (SIGKILL, OOM, a crash): a child's own end of its stdin is not
    enough, as a server busy with a task or one that ignores EOF keeps running. The launcher costs
    one ``python -S -I`` start (~15 ms); the command keeps its pid, process group and environment.
    Elsewhere than Linux ``argv`` is returned as it is."""
    if not sys.platform.startswith("linux") or not argv:
        return list(argv)
    return [sys.executable, "-S", "-I", "-c", _LAUNCH, str(os.getpid()), *argv]
