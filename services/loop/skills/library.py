"""The user's skill library on disk: install, remove, and the pending skills awaiting review.

Installing a skill is giving the model instructions it will follow, so a source is checked
before anything is copied: no symbolic link anywhere in it, a description in its SKILL.md, a
plain name, and no skill of that name in the library unless ``force``. Pending skills (proposed
by the model through ``skill_propose``) wait under ``<library>/.pending/``, invisible to the
registry (a dot-folder), until the user approves or denies them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from services.kernel.errors import AiCodingError
from services.loop.skills.registry import PENDING
from services.loop.skills.skill import NAME_RE, SKILL_FILE, Skill, fix_hint, parse_skill, symlinks_in

GIT_TIMEOUT_S = 120
MAX_PROPOSED_BYTES = 64_000
_OWNER_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


class SkillError(AiCodingError):
    """A skill cannot be installed, removed, approved or proposed (the message says why)."""

    reason = "skill_refused"


@dataclass(frozen=True)
class Candidate:
    """A skill found in a source, checked and ready to copy."""

    skill: Skill
    replaces: bool


def is_git_source(src: str) -> bool:
    """A git URL, ``owner/repo`` on GitHub, or a bare repository path (else a local folder)."""
    if "://" in src or src.startswith("git@"):
        return True
    path = Path(src).expanduser()
    if path.is_dir():
        return (path / "HEAD").is_file() and (path / "objects").is_dir()  # a bare repository
    return bool(_OWNER_REPO.match(src))


def git_url(src: str) -> str:
    if _OWNER_REPO.match(src) and not Path(src).expanduser().exists():
        return f"https://github.com/{src}.git"
    return src


def _clone(url: str, target: Path) -> subprocess.CompletedProcess[str]:
    """``git clone`` under a wall-clock deadline that ends the work: git and its transport helpers run
    in their own process group, killed whole at the deadline; a transfer slower than 1 KB/s for 30 s
    is ended by git itself."""
    argv = ["git", "-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=30", "clone", "--depth", "1",
            "--quiet", url, str(target)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/local/bin:/usr/bin:/bin"})
    try:
        out, err = proc.communicate(timeout=GIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@contextmanager
def fetched(src: str) -> Iterator[Path]:
    """The source as a local folder (a git source is cloned into a temporary one)."""
    if not is_git_source(src):
        path = Path(src).expanduser()
        if not path.exists():
            raise SkillError(f"no folder {src}", hint="Pass a skill folder, a git URL or owner/repo.")
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="ai-coding-skill-") as tmp:
        target = Path(tmp) / "src"
        try:
            done = _clone(git_url(src), target)
        except subprocess.TimeoutExpired:
            raise SkillError(f"cannot clone {src}: git clone did not finish within its {GIT_TIMEOUT_S} s deadline "
                             "and was stopped (with its helpers); nothing was installed",
                             hint="Check the network and the URL, or clone it yourself and install the folder.") from None
        except OSError as err:
            raise SkillError(f"cannot clone {src}: {err}", hint="Check that git is installed and the URL.") from None
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["git clone failed"])[-1]
            raise SkillError(f"cannot clone {src}: {why}", hint="Check the URL and that you can read it.")
        shutil.rmtree(target / ".git", ignore_errors=True)
        yield target


def candidates(root: Path, library: Path, force: bool) -> list[Candidate]:
    """The skills in ``root`` (itself a skill, or holding skill folders), each checked; raises
    SkillError for the first that may not be installed."""
    links = symlinks_in(root)
    if links:
        raise SkillError(f"refused: {root} contains symbolic links ({', '.join(links[:5])})",
                         hint="A skill must be plain files; copy the targets in instead of linking them.")
    if (root / SKILL_FILE).is_file():
        folders = [root]
    else:
        base = root / "skills" if (root / "skills").is_dir() else root
        folders = sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")
                         and (p / SKILL_FILE).is_file())
    if not folders:
        raise SkillError(f"no {SKILL_FILE} in {root} (nor in its top-level folders)",
                         hint="A skill is a folder with a SKILL.md holding a name and a description.")
    out: list[Candidate] = []
    for folder in folders:
        skill = parse_skill(folder)
        if skill.broken:
            raise SkillError(f"refused {folder.name}: {skill.problem}", hint=fix_hint(skill.problem))
        exists = (library / skill.name).exists()
        if exists and not force:
            raise SkillError(f"refused {skill.name}: the library already has a skill of that name",
                             hint="Pass --force to replace it, or `ai-coding skill remove` it first.")
        out.append(Candidate(skill, exists))
    return out


def install(candidate: Candidate, library: Path) -> Path:
    """Copy a checked skill into the library (replacing one of its name when it was allowed to)."""
    library.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = library / candidate.skill.name
    staging = Path(tempfile.mkdtemp(prefix=f".{candidate.skill.name}-", dir=library))
    try:
        shutil.copytree(candidate.skill.path, staging / "skill", symlinks=True,
                        ignore=shutil.ignore_patterns(".git"))
        if target.exists():
            shutil.rmtree(target)
        (staging / "skill").rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def installed(library: Path) -> list[Skill]:
    if not library.is_dir():
        return []
    return [parse_skill(p, "user library") for p in sorted(library.iterdir())
            if p.is_dir() and not p.name.startswith(".") and not p.is_symlink()]


def remove(name: str, library: Path) -> Path:
    target = library / name
    if not NAME_RE.match(name) or not target.is_dir() or target.is_symlink():
        names = ", ".join(s.name for s in installed(library)) or "none"
        raise SkillError(f"no skill {name!r} in the library", hint=f"Installed: {names}.")
    shutil.rmtree(target)
    return target


# -- pending review --


def pending(library: Path) -> list[Skill]:
    root = library / PENDING
    if not root.is_dir():
        return []
    return [parse_skill(p, "pending") for p in sorted(root.iterdir()) if p.is_dir() and not p.is_symlink()]


def propose(library: Path, name: str, description: str, body: str) -> Path:
    """Write a skill proposal under ``.pending/`` (the user approves it into the library, or not)."""
    if not NAME_RE.match(name):
        raise ValueError(f"name {name!r} is not a plain name: use letters, digits, '.', '_' or '-' (max 64)")
    description = " ".join(description.split())
    if not description:
        raise ValueError("a skill needs a one-line description (the catalog shows it)")
    text = f"---\nname: {name}\ndescription: {_yaml_str(description)}\n---\n\n{body.strip()}\n"
    if len(text.encode()) > MAX_PROPOSED_BYTES:
        raise ValueError(f"the skill is over {MAX_PROPOSED_BYTES} bytes; keep it to the instructions that matter")
    folder = library / PENDING / name
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    (folder / SKILL_FILE).write_text(text, encoding="utf-8")
    return folder


def _yaml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def approve(library: Path, name: str) -> Path:
    source = library / PENDING / name
    if not NAME_RE.match(name) or not source.is_dir():
        names = ", ".join(s.name for s in pending(library)) or "none"
        raise SkillError(f"no pending skill {name!r}", hint=f"Pending: {names}.")
    checked = candidates(source, library, force=False)[0]
    target = library / checked.skill.name
    source.rename(target)
    return target


def deny(library: Path, name: str) -> None:
    source = library / PENDING / name
    if not NAME_RE.match(name) or not source.is_dir():
        names = ", ".join(s.name for s in pending(library)) or "none"
        raise SkillError(f"no pending skill {name!r}", hint=f"Pending: {names}.")
    shutil.rmtree(source)
