"""The workspace state directory is private and ignored by git; one the user made is left alone."""

from __future__ import annotations

import subprocess
from pathlib import Path

from services.kernel.statedir import ensure_state_dir
from services.loop.core.sessions import SessionStore


def test_a_new_state_dir_is_private_and_git_ignores_everything_in_it(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "code.py").write_text("x = 1\n")
    store = SessionStore(tmp_path)
    session = store.create("fake")
    session.messages.append({"role": "user", "content": "secret plans"})
    store.save(session)
    state = tmp_path / ".ai-coding"
    assert state.stat().st_mode & 0o777 == 0o700
    assert (state / "sessions").stat().st_mode & 0o777 == 0o700
    assert store.snapshot_path(session.id).stat().st_mode & 0o777 == 0o600
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout
    assert status.splitlines() == ["?? code.py"]  # nothing under .ai-coding shows up


def test_a_state_dir_the_user_made_gets_no_gitignore(tmp_path: Path) -> None:
    (tmp_path / ".ai-coding").mkdir()
    assert ensure_state_dir(tmp_path) == tmp_path / ".ai-coding"
    assert not (tmp_path / ".ai-coding" / ".gitignore").exists()


def test_reopening_a_session_does_not_change_its_last_activity(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    session = store.create("fake")
    session.messages.append({"role": "user", "content": "hello"})
    store.save(session)
    saved = session.updated
    reopened, _ = SessionStore(tmp_path).load(session.id)  # loading compacts the journal
    assert reopened.updated == saved
    SessionStore(tmp_path).compact(reopened)  # as a loop shutting down does
    assert SessionStore(tmp_path).read(session.id)[0].updated == saved
