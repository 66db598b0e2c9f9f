"""The skill registry over folders, and the catalog it makes (budget, version and status)."""

from __future__ import annotations

import os
from pathlib import Path

from services.loop.skills.registry import SkillDir, SkillRegistry, build_catalog, catalog_lines
from services.loop.skills.skill import parse_skill


def write(root: Path, name: str, text: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text)
    return folder


def test_dot_folders_symlinked_folders_and_folders_without_skill_md_are_not_skills(tmp_path: Path) -> None:
    write(tmp_path, "real", "---\ndescription: A real one\n---\nbody")
    write(tmp_path, ".pending", "---\ndescription: hidden\n---\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(write(tmp_path.parent / "elsewhere", "outside", "---\ndescription: x\n---\n"))
    found = SkillRegistry([SkillDir(tmp_path, "t")]).scan()
    assert list(found.skills) == ["real"]


def test_frontmatter_version_and_status_are_read_and_unknown_status_is_active(tmp_path: Path) -> None:
    skill = parse_skill(write(tmp_path, "s", "---\nname: s\ndescription: d\nversion: 1.10\nstatus: weird\n---\nB"))
    assert (skill.version, skill.status, skill.badges(), skill.body) == ("1.1", "active", " (v1.1)", "B")
    quoted = parse_skill(write(tmp_path, "q", '---\ndescription: d\nversion: "1.10"\nstatus: archived\n---\n'))
    assert quoted.badges() == " (v1.10) [archived]"
    broken = parse_skill(write(tmp_path, "b", "---\nname: b\n---\nno description"))
    assert broken.broken and "no description" in broken.problem and broken.badges() == " [broken]"
    plain = parse_skill(write(tmp_path, "old", "Just instructions, no frontmatter"))
    assert plain.broken  # the catalog needs a description


def test_the_catalog_keeps_to_its_budget_and_says_it_was_truncated(tmp_path: Path) -> None:
    for n in range(100):
        write(tmp_path, f"skill-{n:03}", f"---\ndescription: {'word ' * 20}{n}\n---\n")
    lines = catalog_lines(SkillRegistry([SkillDir(tmp_path, "t")]).scan())
    text, truncated = build_catalog(lines, budget=2000)
    assert truncated and len(text) <= 2000 and "catalog is truncated at 2000 characters" in text
    full, cut = build_catalog(dict(list(lines.items())[:3]), budget=8000)
    assert not cut and full.count("\n- skill-") == 3


def test_a_skill_md_is_parsed_again_only_when_its_mtime_or_size_changes(tmp_path: Path) -> None:
    folder = write(tmp_path, "s", "---\ndescription: one\n---\n")
    registry = SkillRegistry([SkillDir(tmp_path, "t")])
    first = registry.scan().skills["s"]
    assert registry.scan().skills["s"] is first  # unchanged stamp: the cached object
    md = folder / "SKILL.md"
    md.write_text("---\ndescription: two!\n---\n")
    st = md.stat()
    os.utime(md, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert registry.scan().skills["s"].description == "two!"
