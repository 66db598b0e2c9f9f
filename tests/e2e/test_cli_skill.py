"""`ai-coding skill install | list | remove` as a user runs them (real processes, real git)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.cli_stack import cli


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AI_CODING_", "XDG_"))}
    return {**base, "HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CONFIG_HOME": str(home / ".config")}


def library(env: dict[str, str]) -> Path:
    return Path(env["XDG_DATA_HOME"]) / "ai-coding" / "skills"


def skill_folder(root: Path, name: str, description: str | None = "Tidy imports the project's way") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    desc = f"description: {description}\n" if description is not None else ""
    (folder / "SKILL.md").write_text(f"---\nname: {name}\n{desc}---\nSort imports with ruff.\n")
    (folder / "notes.md").write_text("extra\n")
    return folder


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@x"})


def test_install_from_a_local_folder_shows_the_skill_then_list_and_remove(env: dict[str, str], tmp_path: Path) -> None:
    src = skill_folder(tmp_path / "src", "imports")
    done = cli(env, "skill", "install", str(src), "--yes")
    assert done.returncode == 0, done.stderr
    assert "imports: Tidy imports the project's way" in done.stdout and "SKILL.md, notes.md" in done.stdout
    assert (library(env) / "imports" / "notes.md").read_text() == "extra\n"
    listed = json.loads(cli(env, "skill", "list", "--json").stdout)
    assert [s["name"] for s in listed["skills"]] == ["imports"]
    removed = cli(env, "skill", "remove", "imports")
    assert removed.returncode == 0 and not (library(env) / "imports").exists()


def test_install_from_a_local_bare_git_repository_by_url(env: dict[str, str], tmp_path: Path) -> None:
    work = tmp_path / "work"
    skill_folder(work / "skills", "changelog", "Keep CHANGELOG.md in the keep-a-changelog format")
    skill_folder(work / "skills", "commits", "Write commit messages that say why")
    git("init", "-q", cwd=work)
    git("add", ".", cwd=work)
    git("commit", "-q", "-m", "skills", cwd=work)
    bare = tmp_path / "skills.git"
    git("clone", "-q", "--bare", str(work), str(bare), cwd=tmp_path)
    done = cli(env, "skill", "install", f"file://{bare}", "--yes")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in library(env).iterdir()) == ["changelog", "commits"]
    assert not (library(env) / "changelog" / ".git").exists()


def test_a_symlinked_skill_is_refused_and_nothing_is_installed(env: dict[str, str], tmp_path: Path) -> None:
    src = skill_folder(tmp_path / "src", "leaky")
    (src / "key").symlink_to(Path(env["HOME"]) / ".ssh" / "id_ed25519")
    done = cli(env, "skill", "install", str(src), "--yes")
    assert done.returncode != 0
    assert "symbolic links (key)" in done.stderr
    assert not (library(env) / "leaky").exists()
    link = tmp_path / "linked"
    link.symlink_to(skill_folder(tmp_path / "real", "plain"))
    again = cli(env, "skill", "install", str(link), "--yes")
    assert again.returncode != 0 and "symbolic links" in again.stderr


def test_a_skill_without_a_description_is_refused(env: dict[str, str], tmp_path: Path) -> None:
    src = skill_folder(tmp_path / "src", "vague", description=None)
    done = cli(env, "skill", "install", str(src), "--yes")
    assert done.returncode != 0 and "has no description" in done.stderr
    assert not library(env).joinpath("vague").exists()


def test_an_existing_name_is_refused_without_force(env: dict[str, str], tmp_path: Path) -> None:
    src = skill_folder(tmp_path / "src", "imports")
    assert cli(env, "skill", "install", str(src), "--yes").returncode == 0
    (src / "SKILL.md").write_text("---\nname: imports\ndescription: Newer\n---\nv2\n")
    refused = cli(env, "skill", "install", str(src), "--yes")
    assert refused.returncode != 0 and "already has a skill of that name" in refused.stderr
    assert "Newer" not in (library(env) / "imports" / "SKILL.md").read_text()
    forced = cli(env, "skill", "install", str(src), "--yes", "--force")
    assert forced.returncode == 0 and "Newer" in (library(env) / "imports" / "SKILL.md").read_text()


def test_install_asks_first_and_without_a_terminal_installs_nothing_unless_yes(
        env: dict[str, str], tmp_path: Path) -> None:
    src = skill_folder(tmp_path / "src", "imports")
    done = cli(env, "skill", "install", str(src))
    assert done.returncode != 0 and "pass --yes" in done.stderr
    assert "imports: Tidy imports" in done.stdout  # shown before asking
    assert not (library(env) / "imports").exists()


@pytest.mark.parametrize(("skill_md", "problem", "fix"), [
    ("---\nname: [oops\ndescription: x\n---\nbody\n", "not valid YAML", "Fix the YAML"),
    ("---\nname: bad name!\ndescription: x\n---\nbody\n", "not a plain name", "Set `name:`"),
    ("---\nname: big\ndescription: x\n---\n" + "y" * 300_000, "bytes", "Keep SKILL.md under"),
    ("---\nname: open\ndescription: x\nbody\n", "no closing ---", "End the frontmatter"),
    ("---\nname: vague\n---\nbody\n", "no description", "Add `description:`"),
], ids=["broken_yaml", "bad_name", "oversized", "unclosed", "no_description"])
def test_each_broken_skill_is_refused_with_the_fix_for_its_own_problem(
        env: dict[str, str], tmp_path: Path, skill_md: str, problem: str, fix: str) -> None:
    src = tmp_path / "src" / "candidate"
    src.mkdir(parents=True)
    (src / "SKILL.md").write_text(skill_md)
    done = cli(env, "skill", "install", str(src), "--yes")
    assert done.returncode != 0 and problem in done.stderr and fix in done.stderr, done.stderr
    others = [hint for hint in ("Fix the YAML", "Set `name:`", "Keep SKILL.md under", "End the frontmatter",
                                "Add `description:`") if hint != fix]
    assert not any(hint in done.stderr for hint in others), done.stderr
