"""The bubblewrap sandbox for bash and jobs: argv, environment, availability.

Every command gets its own bwrap instance: new session (no TIOCSTI into the
caller's terminal), dies with the service, its own user namespace with every
capability dropped (the service runs as root in CI: without this a command
could remount its way out), its own pid namespace with a fresh /proc (no
other process's environ), no network unless allowed, the host read-only, the
workspace read-write except ``.git/hooks`` and ``.git/config``, a private
/tmp, and the user's home, /run and the runtime dir hidden.
"""

from __future__ import annotations

import asyncio
import atexit
import glob
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from services.tools.errors import ToolError

BASE_FLAGS = ("--new-session", "--die-with-parent", "--unshare-user", "--cap-drop", "ALL", "--unshare-pid",
              "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
# Mounts apply in order: the host root first, then a fresh /proc and /dev over it.
SYSTEM_MOUNTS = ("--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev")
SAFE_ENV_NAMES = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ", "USER",
                  "LOGNAME", "COLORTERM", "NO_COLOR")
FIXED_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "SHELL": "/bin/bash"}
SANDBOX_HOME = "/tmp"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|PRIVATE", re.IGNORECASE)
ALWAYS_HIDDEN = ("/home", "/root", "/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm", "/mnt", "/media",
                 "/etc/ssl/private")
# Readable by the service's own uid (root in CI) even without capabilities: shown as empty files.
HIDDEN_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers")
HIDDEN_FILE_GLOBS = ("/etc/ssh/ssh_host_*_key",)

FIX_HINT = ("Install bubblewrap (`apt-get install bubblewrap`), or opt out of the sandbox by setting "
            "`tools.sandbox.mode: none` in ~/.config/ai-coding/config.yaml.")


def sandbox_env(host: Mapping[str, str], extra_allowed: Sequence[str], secret_names: Sequence[str],
                home: str) -> dict[str, str]:
    """The environment a command gets: an allow-list, never a secret-looking or named-secret variable."""
    secrets = set(secret_names)
    env: dict[str, str] = {}
    for name in (*SAFE_ENV_NAMES, *extra_allowed):
        if name in host and name not in secrets and not _SECRET_NAME.search(name):
            env[name] = host[name]
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env.setdefault("TERM", "dumb")
    env.update(FIXED_ENV)
    env["HOME"] = home
    return env


def protected_git_paths(root: Path) -> list[Path]:
    """``.git``, ``.git/hooks`` and ``.git/config`` of a root (creating an empty hooks dir so it can be
    mounted read-only; a missing one could otherwise be created by a command and run later by git)."""
    git = root / ".git"
    if git.is_symlink() or not git.is_dir():
        return []
    hooks = git / "hooks"
    if not hooks.exists() and not hooks.is_symlink():
        hooks.mkdir()
    return [p for p in (git, hooks, git / "config") if p.exists() and os.path.realpath(p) == str(p)]


_EMPTY: list[str] = []


def empty_file() -> str:
    """A read-only empty regular file to mount over hidden files (a /dev/null bind would be a device
    node, which a user-namespace mount refuses to open: the command would see "Permission denied")."""
    if not _EMPTY or not os.path.isfile(_EMPTY[0]):
        directory = tempfile.mkdtemp(prefix="ai-coding-sandbox-")
        atexit.register(shutil.rmtree, directory, True)
        path = os.path.join(directory, "empty")
        with open(path, "wb"):
            pass
        os.chmod(path, 0o444)
        _EMPTY[:] = [path]
    return _EMPTY[0]


def hidden_files() -> list[str]:
    """Host files with credentials that exist here and get /dev/null mounted over them."""
    found = [path for path in HIDDEN_FILES if os.path.isfile(path)]
    for pattern in HIDDEN_FILE_GLOBS:
        found += sorted(glob.glob(pattern))
    return found


def hidden_mounts(paths: Sequence[str], roots: Sequence[Path]) -> list[str]:
    """Existing directories to cover with an empty tmpfs: deduplicated, none inside a root, and none
    below another one already covered."""
    out: list[str] = []
    for real in sorted({os.path.realpath(p) for p in paths}):
        inside_root = any(Path(real) == r or Path(real).is_relative_to(r) for r in roots)
        covered = any(Path(real).is_relative_to(done) for done in out)
        if os.path.isdir(real) and not inside_root and not covered:
            out.append(real)
    return out


def bwrap_argv(bwrap: str, roots: Sequence[Path], cwd: Path, network: bool, hidden: Sequence[str],
               command: str) -> list[str]:
    """The full bwrap command line for ``command`` (pure apart from creating .git/hooks)."""
    argv = [bwrap, *BASE_FLAGS]
    if not network:
        argv.append("--unshare-net")
    argv += SYSTEM_MOUNTS
    for real in hidden_mounts([*ALWAYS_HIDDEN, *hidden], roots):
        argv += ["--tmpfs", real]
    files = hidden_files()
    if files:
        empty = empty_file()
        for secret_file in files:
            argv += ["--ro-bind", empty, secret_file]
    for root in roots:
        argv += ["--bind", str(root), str(root)]
    for root in roots:
        git_paths = protected_git_paths(root)
        if git_paths:
            git, *readonly = git_paths
            argv += ["--bind", str(git), str(git)]  # a mount point cannot be renamed away
            for protected in readonly:
                argv += ["--ro-bind", str(protected), str(protected)]
    argv += ["--chdir", str(cwd), "--", "/bin/bash", "-c", command]
    return argv


def host_argv(command: str) -> list[str]:
    """The command line when the sandbox is off (``tools.sandbox.mode: none``)."""
    return ["/bin/bash", "-c", command]


class BwrapProbe:
    """Checks once that bwrap exists and can start a namespace here; caches success only."""

    def __init__(self, bwrap: str) -> None:
        self.bwrap = bwrap
        self._ok = False

    async def ensure(self) -> str:
        """The bwrap path, or a ``sandbox_unavailable`` error naming the cause and the fix."""
        found = shutil.which(self.bwrap)
        if found is None:
            raise ToolError("sandbox_unavailable", f"bubblewrap ({self.bwrap}) is not installed or not on PATH",
                            FIX_HINT)
        if self._ok:
            return found
        argv = [found, *BASE_FLAGS, "--unshare-net", *SYSTEM_MOUNTS, "--", "/bin/true"]
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE, env={"PATH": "/usr/bin:/bin"})
            _, err = await asyncio.wait_for(proc.communicate(), timeout=10)
        except (OSError, TimeoutError) as exc:
            raise ToolError("sandbox_unavailable", f"bubblewrap ({found}) cannot start: {exc}", FIX_HINT) from None
        if proc.returncode != 0:
            cause = err.decode("utf-8", errors="replace").strip().splitlines()
            detail = cause[-1] if cause else f"exit status {proc.returncode}"
            raise ToolError(
                "sandbox_unavailable",
                f"bubblewrap cannot create its namespaces here ({detail}); user namespaces may be disabled "
                "(sysctl kernel.unprivileged_userns_clone / AppArmor restrict_unprivileged_userns)",
                FIX_HINT)
        self._ok = True
        return found
