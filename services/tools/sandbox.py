"""The bubblewrap sandbox for bash and jobs: argv, environment, availability.

Every command gets its own bwrap instance: new session (no TIOCSTI into the
caller's terminal), dies with the service, its own user namespace with every
capability dropped (the service runs as root in CI: without this a command
could remount its way out), its own pid namespace with a fresh /proc (no
other process's environ), no network unless allowed, the host's system
directories read-only and every other top-level directory empty (plus
``tools.sandbox.read_only_paths``), a private /tmp, the user's home, /run, the
runtime, config and data dirs hidden (wherever they are, even inside a root),
and each root read-write except what the host later trusts:

- git's control data as a whole: ``<root>/.git`` (a directory or a ``gitdir:``
  file) and the ``.git`` of every submodule path ``.gitmodules`` names are
  read-only; where there is none, an empty read-only directory stands in while
  commands run (services/tools/placeholders.py removes it after the last one),
  so a command cannot ``git init`` a repository whose config the user's next
  ``git status`` would run, and the user's folder keeps no ``.git`` of ours. git reads work; commit/branch/stash do not (the
  bash tool says so): see docs/security.md for why.
- the workspace state ``<root>/.ai-coding`` (sessions, traces, memory): the
  services load and trust it, and it holds whatever earlier turns saw (a file
  the user attached), so commands see an empty read-only directory there.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import glob
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from services.kernel.statedir import STATE_DIR, ensure_state_dir
from services.tools import placeholders
from services.tools.egress.forwarder import EgressMount
from services.tools.errors import ToolError
from services.tools.paths import is_inside, open_parent_dir

BASE_FLAGS = ("--new-session", "--die-with-parent", "--unshare-user", "--cap-drop", "ALL", "--unshare-pid",
              "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
# Mounts apply in order: an empty root, the visible top-level host directories read-only into it (see
# system_mounts), then a fresh /proc and /dev over it.
VIRTUAL_MOUNTS = ("--proc", "/proc", "--dev", "/dev")
SAFE_ENV_NAMES = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ", "USER",
                  "LOGNAME", "COLORTERM", "NO_COLOR")
FIXED_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "SHELL": "/bin/bash"}
SANDBOX_HOME = "/tmp"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|PRIVATE", re.IGNORECASE)
ALWAYS_HIDDEN = ("/home", "/root", "/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm", "/mnt", "/media",
                 "/etc/ssl/private")
# Readable by the service's own uid (root in CI) even without capabilities: shown as empty files.
# The host's top-level directories commands see (read-only). Every other top-level directory is an
# empty tmpfs, so another project's files (its .ai-coding sessions, say) under /srv or /work cannot
# be read; ``tools.sandbox.read_only_paths`` shows more, the roots are mounted on top.
VISIBLE_TOP_LEVEL = frozenset({"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "var",
                               "nix", "snap", "gnu", "sys", "proc", "dev"})
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


def _gitmodules_paths(root: Path) -> list[str]:
    """The ``path =`` values of ``<root>/.gitmodules`` (a small, trusted-enough read: a path it names
    only adds a read-only mount; a path it drops cannot unprotect what git's own index lists,
    because ``.git`` is read-only)."""
    try:
        text = (root / ".gitmodules").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [m.group(1).strip() for m in _SUBMODULE_PATH.finditer(text)]


# [ \t], not \s: `^\s*` ran across every following blank line at each line start (quadratic on a
# .gitmodules of newlines, a file the model can write); the value is stripped by the caller.
_SUBMODULE_PATH = re.compile(r"^[ \t]*path[ \t]*=[ \t]*(.*\S)", re.MULTILINE)


def read_only_paths(root: Path) -> list[Path]:
    """What a command may read but not change below ``root``: git's control data and the workspace
    state. Missing ones are created first (an empty placeholder ``.git``, the state dir with its
    .gitignore), each relative to a descriptor of its parent so a link swapped in by a running job
    cannot make this create anything elsewhere."""
    out = [ensure_state_dir(root)]
    for raw in [".", *_gitmodules_paths(root)]:
        git = root / raw / ".git"
        if ".." in Path(raw).parts or Path(raw).is_absolute() or not is_inside(Path(os.path.realpath(git)), [root]):
            continue
        real = Path(os.path.realpath(git))
        if not os.path.exists(real):  # missing, or a dangling link to a place inside the root
            with contextlib.suppress(OSError, ToolError):
                parent, name = open_parent_dir(real, [root], str(git), create=True)
                try:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o755, dir_fd=parent)
                        placeholders.note_created(real)  # removed when no command holds it
                finally:
                    os.close(parent)
        if os.path.exists(real) and real not in out:
            out.append(real)
    return out


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


def system_mounts() -> list[str]:
    """The sandbox's root: an empty tmpfs holding only the :data:`VISIBLE_TOP_LEVEL` host directories
    (read-only) and their symlinks (/bin -> usr/bin). Every other top-level directory is simply absent,
    so a directory created on the host after this list was made is not visible either, and one removed
    meanwhile cannot fail the mount (hiding by listing raced both ways)."""
    argv = ["--tmpfs", "/"]
    try:
        entries = sorted(os.scandir("/"), key=lambda e: e.name)
    except OSError:
        entries = []
    for entry in entries:
        if entry.name not in VISIBLE_TOP_LEVEL or entry.name in ("proc", "dev"):
            continue
        if entry.is_symlink():
            with contextlib.suppress(OSError):
                argv += ["--symlink", os.readlink(entry.path), entry.path]
        elif entry.is_dir(follow_symlinks=False):
            argv += ["--ro-bind-try", entry.path, entry.path]
    return [*argv, *VIRTUAL_MOUNTS]


def hidden_top_level() -> list[str]:
    """Top-level host directories outside :data:`VISIBLE_TOP_LEVEL` (symlinks such as /bin -> usr/bin
    are left alone: they point at visible places)."""
    try:
        entries = list(os.scandir("/"))
    except OSError:
        return []
    return sorted(f"/{e.name}" for e in entries
                  if e.name not in VISIBLE_TOP_LEVEL and e.is_dir(follow_symlinks=False))


def hidden_mounts(paths: Sequence[str], roots: Sequence[Path]) -> tuple[list[str], list[str]]:
    """Existing directories to cover with an empty tmpfs, deduplicated and none below another:
    (those outside every root: mounted before the roots, so a root inside one still shows;
    those inside a root: mounted after the roots, so they stay hidden there too)."""
    outside: list[str] = []
    inside: list[str] = []
    for real in sorted({os.path.realpath(p) for p in paths}):
        if not os.path.isdir(real) or any(Path(real) == r for r in roots):
            continue
        group = inside if is_inside(Path(real), roots) else outside
        if not any(_below(real, done) for done in group):
            group.append(real)
    return outside, inside


def _below(real: str, top: str) -> bool:
    """``real`` is ``top`` or below it; both are realpath strings, so this is ``Path.is_relative_to``
    without building two Paths per pair (this runs for every pair at every command's start)."""
    return real == top or real.startswith(top if top.endswith("/") else top + "/")


def bwrap_argv(bwrap: str, roots: Sequence[Path], cwd: Path, network: bool, hidden: Sequence[str],
               command: str, shown: Sequence[str] = (), egress: EgressMount | None = None) -> list[str]:
    """The full bwrap command line for ``command`` (creates the placeholders of
    :func:`read_only_paths` when missing). ``shown``: host directories to show read-only inside
    hidden top-level ones (already checked to hold no private dir). ``egress``: the egress
    proxy's Unix socket and the python3 to run the forwarder: no network but loopback, the
    socket bind-mounted, the command started behind the forwarder."""
    argv = [bwrap, *BASE_FLAGS]
    if not network:
        argv.append("--unshare-net")
    argv += system_mounts()
    outside, inside = hidden_mounts(list(ALWAYS_HIDDEN), roots)
    for real in outside:
        argv += ["--tmpfs", real]
    for extra in shown:
        argv += ["--ro-bind-try", extra, extra]
    private_outside, private_inside = hidden_mounts(hidden, roots)
    for real in private_outside:
        if any(_below(real, h) for h in outside) and not any(Path(real).is_relative_to(x) for x in shown):
            continue  # already inside an empty tmpfs
        argv += ["--tmpfs", real]  # after `shown`: a private dir stays hidden whatever is shown
    inside = sorted({*inside, *private_inside})
    files = hidden_files()
    if files:
        empty = empty_file()
        for secret_file in files:
            argv += ["--ro-bind", empty, secret_file]
    for root in roots:
        argv += ["--bind", str(root), str(root)]
    for root in roots:
        for protected in read_only_paths(root):
            if protected == root / STATE_DIR:  # hidden, not only read-only: what earlier turns saw stays out
                argv += ["--tmpfs", str(protected), "--remount-ro", str(protected)]
                continue
            argv += ["--ro-bind", str(protected), str(protected)]  # a mount point cannot be renamed away
    for real in inside:
        argv += ["--tmpfs", real, "--remount-ro", real]
    shell = ["/bin/bash", "-c", command]
    if egress is not None:
        from services.tools.egress.forwarder import SOCKET_IN_SANDBOX, wrap

        argv += ["--bind", egress.socket, SOCKET_IN_SANDBOX]
        for source, target in egress.files:
            argv += ["--ro-bind", source, target]
        shell = wrap(egress.python, shell)
    argv += ["--remount-ro", "/"]  # the root tmpfs, once all is mounted in it (the mounts keep their own modes)
    argv += ["--chdir", str(cwd), "--", *shell]
    return argv


def host_argv(command: str) -> list[str]:
    """The command line when the sandbox is off (``tools.sandbox.mode: none``)."""
    return ["/bin/bash", "-c", command]


class BwrapProbe:
    """Checks once that bwrap exists and can start a namespace here; caches success only.

    The check is one bwrap run (~15 ms on 2 cores). It used to run at the first OpenSession of a
    tools process, which the first ``ai-coding run`` after ``ai-coding up`` (and a cold run) waited
    for; :meth:`start` runs it in the background when the service starts, and a session that opens
    meanwhile waits for that run instead of starting its own. A failure is not kept: the next
    :meth:`ensure` checks again and raises it (a session opening is told, as before)."""

    def __init__(self, bwrap: str) -> None:
        self.bwrap = bwrap
        self._ok = False
        self._running: asyncio.Future[None] | None = None

    def start(self) -> None:
        """Check in the background now (on the running event loop), unless it is known to work."""
        if not self._ok and self._running is None:
            self._running = asyncio.ensure_future(self._check_found())
            self._running.add_done_callback(self._finished)

    def _finished(self, done: asyncio.Future[None]) -> None:
        if self._running is done:
            self._running = None
        if not done.cancelled():
            done.exception()  # retrieved: a failure is raised again by the next ensure(), not logged as lost

    async def _check_found(self) -> None:
        found = shutil.which(self.bwrap)
        if found is not None:
            await self._check(found)

    async def ensure(self) -> str:
        """The bwrap path, or a ``sandbox_unavailable`` error naming the cause and the fix."""
        found = shutil.which(self.bwrap)
        if found is None:
            raise ToolError("sandbox_unavailable", f"bubblewrap ({self.bwrap}) is not installed or not on PATH",
                            FIX_HINT)
        if self._ok:
            return found
        running = self._running
        if running is not None:  # the background check: wait for it (a cancelled caller leaves it running)
            with contextlib.suppress(Exception):
                await asyncio.shield(running)
            if self._ok:
                return found
        await self._check(found)
        return found

    async def _check(self, found: str) -> None:
        argv = [found, *BASE_FLAGS, "--unshare-net", *system_mounts(), "--", "/bin/true"]
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
