"""One skill: a folder holding ``SKILL.md`` (YAML frontmatter, then the instructions).

Frontmatter: ``name`` (default: the folder's name), ``description`` (required: the catalog shows
it), optional ``version`` (a string, shown only when it is not "1"; never compared as semver) and
``status`` (``active`` or ``archived``; any other value reads as active). A file that cannot be
parsed makes a *broken* skill: listed as such, never in the catalog.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_SKILL_BYTES = 256_000
MAX_FILES_LISTED = 200
STATUSES = ("active", "archived")


@dataclass(frozen=True)
class Skill:
    """A parsed skill folder."""

    name: str
    description: str
    path: Path
    source: str = ""
    """Which skill directory it came from (``workspace skills/``, ``user library``, ...)."""
    version: str = "1"
    status: str = "active"
    body: str = ""
    problem: str = ""
    """Why it is broken (empty: it is not)."""
    stamp: tuple[int, int] = (0, 0)
    """``(mtime_ns, size)`` of its SKILL.md when read."""
    files: tuple[str, ...] = field(default=(), compare=False)

    @property
    def broken(self) -> bool:
        return bool(self.problem)

    def badges(self) -> str:
        """`` (v2) [archived]`` / `` [broken]``: what tool results show next to the name."""
        out = f" (v{self.version})" if self.version != "1" else ""
        if self.status != "active":
            out += f" [{self.status}]"
        if self.broken:
            out += " [broken]"
        return out


def parse_skill(folder: Path, source: str = "") -> Skill:
    """The skill in ``folder`` (broken, with ``problem`` set, when its SKILL.md is not usable)."""
    md = folder / SKILL_FILE
    name = folder.name
    try:
        st = md.lstat()
        stamp = (st.st_mtime_ns, st.st_size)
        if md.is_symlink():
            return Skill(name, "", folder, source, problem="its SKILL.md is a symbolic link", stamp=stamp)
        if st.st_size > MAX_SKILL_BYTES:
            return Skill(name, "", folder, source, problem=f"its SKILL.md is over {MAX_SKILL_BYTES} bytes",
                         stamp=stamp)
        text = md.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        return Skill(name, "", folder, source, problem=f"cannot read SKILL.md: {err.strerror or err}")
    meta, body, problem = split_frontmatter(text)
    if problem:
        return Skill(name, "", folder, source, problem=problem, stamp=stamp)
    name = str(meta.get("name") or folder.name).strip()
    description = " ".join(str(meta.get("description") or "").split())
    status = str(meta.get("status") or "active").strip().lower()
    skill = Skill(name=name, description=description, path=folder, source=source,
                  version=str(meta.get("version") or "1").strip() or "1",
                  status=status if status in STATUSES else "active", body=body.strip(), stamp=stamp,
                  files=list_files(folder))
    if not NAME_RE.match(name):
        return _broken(skill, f"its name {name!r} is not a plain name (letters, digits, . _ -)")
    if not description:
        return _broken(skill, "its SKILL.md has no description in the frontmatter")
    return skill


_FIX_HINTS = (
    ("symbolic link", "Replace the link with the file itself."),
    ("bytes", f"Keep SKILL.md under {MAX_SKILL_BYTES:,} bytes; move long reference material into other files of "
              "the skill folder and name them in SKILL.md."),
    ("cannot read", "Check the file's permissions."),
    ("no closing ---", "End the frontmatter with a line holding only ---."),
    ("not valid YAML", "Fix the YAML between the --- lines (quote a value that holds `: `)."),
    ("not a mapping", "Write the frontmatter as `key: value` lines."),
    ("not a plain name", "Set `name:` to letters, digits, . _ - (at most 64 characters)."),
    ("no description", "Add `description:` to the SKILL.md frontmatter (the catalog shows it)."),
)


def fix_hint(problem: str) -> str:
    """What to change for a broken skill's ``problem`` (one sentence per kind of problem)."""
    return next((hint for key, hint in _FIX_HINTS if key in problem), "Fix the SKILL.md and try again.")


def _broken(skill: Skill, problem: str) -> Skill:
    return Skill(skill.name, skill.description, skill.path, skill.source, skill.version, skill.status, skill.body,
                 problem, skill.stamp, skill.files)


def split_frontmatter(text: str) -> tuple[dict[str, object], str, str]:
    """``(frontmatter, body, problem)``; no frontmatter is an empty mapping, not a problem."""
    if not text.startswith("---"):
        return {}, text, ""
    head, sep, body = text[3:].partition("\n---")
    if not sep:
        return {}, text, "its frontmatter has no closing ---"
    try:
        meta = yaml.safe_load(head) or {}
    except yaml.YAMLError as err:
        return {}, text, f"its frontmatter is not valid YAML ({str(err).splitlines()[0]})"
    if not isinstance(meta, dict):
        return {}, text, "its frontmatter is not a mapping"
    return meta, body.partition("\n")[2], ""


def list_files(folder: Path) -> tuple[str, ...]:
    """Files of the skill other than SKILL.md, relative, sorted (dot-entries and links left out)."""
    out: list[str] = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(root, d)))
        for name in sorted(names):
            path = os.path.join(root, name)
            if name.startswith(".") or os.path.islink(path):
                continue
            rel = os.path.relpath(path, folder)
            if rel != SKILL_FILE:
                out.append(rel)
            if len(out) >= MAX_FILES_LISTED:
                return tuple(out)
    return tuple(out)


def symlinks_in(folder: Path) -> list[str]:
    """Every symbolic link in ``folder``'s tree (the folder itself included), relative."""
    found = [str(folder)] if folder.is_symlink() else []
    for root, dirs, names in os.walk(folder):
        for name in [*dirs, *names]:
            path = os.path.join(root, name)
            if os.path.islink(path):
                found.append(os.path.relpath(path, folder))
    return found
