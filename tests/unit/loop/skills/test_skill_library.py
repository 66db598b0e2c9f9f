"""The library's file operations: what counts as a git source, proposals, approve and deny."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from services.loop.skills import library
from services.loop.skills.library import SkillError


def test_sources_are_told_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain").mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare.git")], check=True)
    assert library.is_git_source("anthropics/skills") and library.git_url("anthropics/skills") == \
        "https://github.com/anthropics/skills.git"
    assert library.is_git_source("https://example.com/x.git") and library.is_git_source("git@host:me/x.git")
    assert library.is_git_source(str(tmp_path / "bare.git"))
    assert not library.is_git_source(str(tmp_path / "plain")) and not library.is_git_source("plain")


def test_a_proposal_waits_then_approve_moves_it_and_refuses_a_taken_name(tmp_path: Path) -> None:
    lib = tmp_path / "skills"
    folder = library.propose(lib, "fmt", "Format the code\nthe project's way", "Run ruff format.")
    assert folder == lib / ".pending" / "fmt"
    [waiting] = library.pending(lib)
    assert waiting.description == "Format the code the project's way" and not waiting.broken
    assert library.approve(lib, "fmt") == lib / "fmt" and not folder.exists()
    library.propose(lib, "fmt", "Again", "x")
    with pytest.raises(SkillError, match="already has a skill of that name"):
        library.approve(lib, "fmt")
    library.deny(lib, "fmt")
    assert library.pending(lib) == [] and (lib / "fmt").is_dir()


@pytest.mark.parametrize(("name", "description", "says"), [
    ("../escape", "d", "not a plain name"), ("ok", "   ", "needs a one-line description")])
def test_a_bad_proposal_is_refused_with_what_to_send(tmp_path: Path, name: str, description: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        library.propose(tmp_path, name, description, "body")
    assert not (tmp_path / ".pending").exists() or not any((tmp_path / ".pending").iterdir())


def test_approving_or_denying_an_unknown_name_says_what_is_pending(tmp_path: Path) -> None:
    library.propose(tmp_path, "real", "d", "b")
    with pytest.raises(SkillError) as err:
        library.approve(tmp_path, "nope")
    assert "Pending: real." in str(err.value)
    with pytest.raises(SkillError):
        library.deny(tmp_path, "../real")
