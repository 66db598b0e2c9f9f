"""The skill registry: every skill folder in the skill directories, and the catalog they make.

A skill directory's top-level folders holding ``SKILL.md`` are skills; dot-folders are not
(the library's ``.pending/`` relies on that) and neither are symbolic links. Directories in
priority order: the workspace's ``skills/``, ``.claude/skills``, ``.agents/skills``, then the
user library (``<data dir>/skills``) and ``~/.claude/skills``; ``--skills DIR`` replaces them
all. A name found twice is the first one's; the other is *shadowed* (``/skills`` shows it).

Each SKILL.md is parsed again only when its ``(mtime, size)`` changed, so refreshing every
step costs a few ``stat`` calls. The catalog (``- name: description``, at most
``CATALOG_BUDGET`` characters) sits in the system message; it changes only when a skill's
catalog line does, which the session declares as one cache break.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from services.kernel.datadir import data_dir
from services.loop.skills.skill import SKILL_FILE, Skill, parse_skill

CATALOG_BUDGET = 8000
MAX_DESCRIPTION_CHARS = 300
PENDING = ".pending"


def library_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's skill library (``ai-coding skill install`` puts skills here)."""
    return data_dir(env) / "skills"


@dataclass(frozen=True)
class SkillDir:
    path: Path
    source: str


def default_dirs(workspace: str, env: Mapping[str, str] | None = None) -> list[SkillDir]:
    """The skill directories, highest priority first (workspace before user)."""
    environ = os.environ if env is None else env
    ws = Path(workspace)
    home = Path(environ.get("HOME", "~")).expanduser()
    return [SkillDir(ws / "skills", "workspace skills/"), SkillDir(ws / ".claude" / "skills", "workspace .claude/skills"),
            SkillDir(ws / ".agents" / "skills", "workspace .agents/skills"),
            SkillDir(library_dir(environ), "user library"), SkillDir(home / ".claude" / "skills", "~/.claude/skills")]


def override_dirs(paths: list[str]) -> list[SkillDir]:
    return [SkillDir(Path(p).expanduser(), f"--skills {p}") for p in paths]


@dataclass
class SkillSet:
    """One scan: the skills by name, and those a higher directory shadows."""

    skills: dict[str, Skill] = field(default_factory=dict)
    shadowed: list[tuple[Skill, Skill]] = field(default_factory=list)
    """(the shadowed skill, the one that wins)."""
    changed: bool = False
    """Some skill folder appeared, went or was re-read since the previous scan."""


class SkillRegistry:
    """The skills of some directories, re-read when a SKILL.md changes."""

    def __init__(self, dirs: list[SkillDir]) -> None:
        self.dirs = dirs
        self._cache: dict[Path, Skill] = {}

    def scan(self) -> SkillSet:
        out = SkillSet()
        seen: dict[Path, Skill] = {}
        for directory in self.dirs:
            for folder, stamp in _skill_folders(directory.path):
                cached = self._cache.get(folder)
                if cached is not None and cached.stamp == stamp and cached.source == directory.source:
                    skill = cached
                else:
                    skill = parse_skill(folder, directory.source)
                    out.changed = True
                seen[folder] = skill
                winner = out.skills.get(skill.name)
                if winner is None:
                    out.skills[skill.name] = skill
                else:
                    out.shadowed.append((skill, winner))
        if seen.keys() != self._cache.keys():
            out.changed = True
        self._cache = seen
        return out


def _skill_folders(root: Path) -> list[tuple[Path, tuple[int, int]]]:
    """Skill folders of ``root`` with their SKILL.md's ``(mtime_ns, size)``."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    out: list[tuple[Path, tuple[int, int]]] = []
    for entry in entries:
        if entry.name.startswith(".") or entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            st = os.lstat(os.path.join(entry.path, SKILL_FILE))
        except OSError:
            continue
        out.append((Path(entry.path), (st.st_mtime_ns, st.st_size)))
    return out


def catalog_lines(skills: SkillSet) -> dict[str, str]:
    """Each catalog skill's line (active, not broken), by name."""
    lines: dict[str, str] = {}
    for name in sorted(skills.skills):
        skill = skills.skills[name]
        if skill.broken or skill.status != "active":
            continue
        description = skill.description
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[: MAX_DESCRIPTION_CHARS - 3] + "..."
        lines[name] = f"- {name}: {description}"
    return lines


def build_catalog(lines: dict[str, str], budget: int = CATALOG_BUDGET) -> tuple[str, bool]:
    """The catalog text within ``budget`` characters, and whether it was truncated."""
    if not lines:
        return "", False
    head = "Skills you can read with the `skill` tool (call it with the name before doing such a task):"
    out = [head]
    used = len(head)
    items = list(lines.values())
    for index, line in enumerate(items):
        left = len(items) - index
        note = f"- ... and {left} more skill(s): the catalog is truncated at {budget} characters; call `skill` " \
               "with no name to list them all"
        if used + 1 + len(line) + (1 + len(note) if left > 1 else 0) > budget:
            out.append(note)
            return "\n".join(out), True
        out.append(line)
        used += 1 + len(line)
    return "\n".join(out), False
