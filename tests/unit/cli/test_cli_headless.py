"""The habits of Claude Code / Codex users as pure decisions: argv, session choice, workspace, stdin."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import pytest

from clients.cli.attachments import Attachment, AttachmentError, collect, mentioned_paths
from clients.cli.headless import PICK, choose_session, default_workspace, git_root, read_prompt, rewrite_argv

COMMANDS = ["run", "sessions", "up"]


@dataclass(frozen=True)
class Row:
    session_id: str
    last_activity: float = 0.0
    preview: str = ""
    message_count: int = 0


def test_print_before_any_command_becomes_run_with_every_other_argument() -> None:
    assert rewrite_argv(["-p", "fix it", "--json"], COMMANDS) == ["run", "fix it", "--json"]
    assert rewrite_argv(["-w", "/x", "--print", "-c", "go"], COMMANDS) == ["run", "-w", "/x", "-c", "go"]
    assert rewrite_argv(["sessions", "list"], COMMANDS) == ["sessions", "list"]
    assert rewrite_argv(["run", "-p"], COMMANDS) == ["run", "-p"]


def test_a_bare_resume_asks_for_the_list() -> None:
    assert rewrite_argv(["-r"], COMMANDS) == [f"--resume={PICK}"]
    assert rewrite_argv(["-p", "-r", "--json"], COMMANDS) == ["run", f"--resume={PICK}", "--json"]
    assert rewrite_argv(["-r", "abc"], COMMANDS) == ["-r", "abc"]


def test_continue_takes_the_newest_session_and_a_new_one_when_there_is_none() -> None:
    assert choose_session([Row("b"), Row("a")], continue_last=True, resume="").session_id == "b"
    none = choose_session([], continue_last=True, resume="")
    assert none.session_id == "" and "starting a new one" in none.note and not none.problem


def test_a_prefix_matching_several_sessions_lists_them_instead_of_picking() -> None:
    rows = [Row("abc1"), Row("abc2"), Row("zzz")]
    choice = choose_session(rows, continue_last=False, resume="abc")
    assert choice.session_id == "" and "matches 2 sessions" in choice.problem
    assert [r.session_id for r in choice.candidates] == ["abc1", "abc2"]
    assert choose_session(rows, continue_last=False, resume="abc2").session_id == "abc2"
    assert "no session" in choose_session(rows, continue_last=False, resume="q").problem
    assert len(choose_session(rows, continue_last=False, resume=PICK).candidates) == 3
    assert choose_session(rows, continue_last=True, resume="abc").problem


def test_a_dotfiles_repository_in_home_does_not_make_home_the_workspace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _repository(tmp_path / "home")
    (home / "notes").mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert default_workspace(home / "notes") == (home / "notes").resolve()


def _repository(directory: Path) -> Path:
    (directory / ".git").mkdir(parents=True)
    (directory / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return directory


def test_the_default_workspace_is_the_git_root_above_the_current_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The machine's own folders above tmp_path are not this test's: git's ceiling keeps them out.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    _repository(tmp_path / "repo")
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    (tmp_path / "loose").mkdir()
    assert default_workspace(tmp_path / "repo" / "a" / "b") == (tmp_path / "repo").resolve()
    assert default_workspace(tmp_path / "loose") == (tmp_path / "loose").resolve()


def test_a_worktree_file_counts_and_a_stray_empty_git_folder_does_not(tmp_path: Path) -> None:
    (tmp_path / "work" / "src").mkdir(parents=True)
    (tmp_path / "work" / ".git").write_text("gitdir: /elsewhere/.git/worktrees/work\n")
    assert default_workspace(tmp_path / "work" / "src") == (tmp_path / "work").resolve()
    (tmp_path / "stray" / ".git").mkdir(parents=True)
    (tmp_path / "stray" / "sub").mkdir()
    assert git_root(tmp_path / "stray" / "sub") != (tmp_path / "stray").resolve()


def test_the_search_stops_at_git_ceiling_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _repository(tmp_path / "outer")
    (tmp_path / "outer" / "inner" / "deep").mkdir(parents=True)
    assert default_workspace(tmp_path / "outer" / "inner" / "deep") == (tmp_path / "outer").resolve()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path / "outer" / "inner"))
    deep = (tmp_path / "outer" / "inner" / "deep").resolve()
    assert default_workspace(deep) == deep


class FakeStdin(io.StringIO):
    def __init__(self, text: str, tty: bool) -> None:
        super().__init__(text)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_dash_or_nothing_with_a_pipe_reads_the_prompt_from_stdin() -> None:
    assert read_prompt("-", FakeStdin("piped", tty=True)) == "piped"
    assert read_prompt("", FakeStdin("piped", tty=False)) == "piped"
    assert read_prompt("", FakeStdin("piped", tty=True)) == ""
    assert read_prompt("typed", FakeStdin("piped", tty=False)) == "typed"


def test_at_mentions_attach_existing_files_and_leave_other_at_words_alone(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    (tmp_path / "shot.png").write_bytes(b"\x89PNG fake")
    prompt = "fix @src/a.py, see shot.png; ping @pytest.fixture and me@example.org"
    assert mentioned_paths(prompt, tmp_path) == ["src/a.py", "shot.png"]
    files = collect(prompt, tmp_path)
    assert files == [Attachment("src/a.py", "text/plain", b"x = 1\n"), Attachment("shot.png", "image/png",
                                                                               b"\x89PNG fake")]


def test_a_large_text_file_is_cut_and_a_binary_one_refused(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("y" * 70_000)
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2")
    big = collect("@big.txt", tmp_path)[0]
    assert big.truncated and len(big.data) == 64_000
    try:
        collect("@blob.bin", tmp_path)
    except AttachmentError as err:
        assert "not a text file" in str(err)
    else:
        raise AssertionError("a binary file was attached")


def test_help_and_readme_use_the_words_a_claude_code_or_codex_user_looks_for() -> None:
    import re
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "clients.cli.entry", "--help"], capture_output=True, text=True,
                          timeout=60, check=False, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    help_text = " ".join(done.stdout.split())
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    for words in ("--print", "-p", "--continue", "-c", "--resume", "-r", "AGENTS.md", "CLAUDE.md"):
        assert re.search(rf"(?<![\w-]){re.escape(words)}(?![\w-])", help_text), words
        assert re.search(rf"(?<![\w-]){re.escape(words)}(?![\w-])", readme), words
