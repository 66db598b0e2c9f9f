"""Code execution on the host through git: a sandboxed command plants what git reads as config or
as a program path, then the user's plain `git status` on the host must run nothing.

Every attack goes through bash in real bwrap (the tool service over gRPC). A positive control
runs the same plant on the host directly and shows git really executes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from ai_coding.v1 import common_pb2

from tests.support.tools_harness import ThreadedToolService

GIT_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_ALLOW_PROTOCOL": "file"}


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, timeout=60,
                          check=False)


def bash(svc: ThreadedToolService, command: str, session: str = "s1") -> common_pb2.ToolResult:
    return svc.call(session, "bash", json.dumps({"command": command, "timeout_seconds": 60}))[1]


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    (path / "a.txt").write_text("a\n")
    git(path, "add", "a.txt")
    assert git(path, "commit", "-qm", "init").returncode == 0
    return path


def fingerprint(directory: Path) -> dict[str, str]:
    """Every entry below ``directory``: file hashes, link targets, directories (the index git
    rewrites on a host status is left out, it is git's own cache)."""
    out: dict[str, str] = {}
    for path in sorted(directory.rglob("*")):
        rel = str(path.relative_to(directory))
        if rel == "index":
            continue
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


def planted_config(marker: Path) -> str:
    # `;` would start a git-config comment unquoted; `true` swallows the arguments git appends.
    return f'[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \\"touch {marker}; true\\"\\n'


def commondir_attack(marker: Path) -> list[str]:
    """The review's case: a common dir of our own whose config carries core.fsmonitor."""
    return ["mkdir -p evil && cp -r .git/objects .git/refs .git/HEAD evil/",
            f"printf '{planted_config(marker)}' > evil/config", 'echo "$PWD/evil" > .git/commondir']


def attacks(marker: Path) -> str:
    """Each way a command could leave git something to execute (all attempted; each may fail)."""
    cfg = planted_config(marker)
    return " ; ".join([
        *commondir_attack(marker),
        # Per-worktree config, attributes, alternates, info/, worktrees/, modules/, hooks, config.
        f"printf '{cfg}' > .git/config.worktree",
        "mkdir -p .git/info && echo '* filter=evil diff=evil' > .git/info/attributes",
        'echo "$PWD/evil/objects" > .git/objects/info/alternates',
        f"mkdir -p .git/worktrees/w && printf '{cfg}' > .git/worktrees/w/config.worktree",
        f"mkdir -p .git/modules/m && printf '{cfg}' > .git/modules/m/config",
        f"printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/post-index-change",
        f"git config core.hooksPath {marker.parent}",
        f"git config core.fsmonitor 'touch {marker}; true'",
        # Replace .git wholesale: move it, or a gitdir: file pointing at our own directory.
        "mv .git .git-moved", "rm -rf .git",
        # The submodule's .git (a gitdir: file in the work tree) swapped for a directory of ours.
        "if [ -e sub/.git ]; then rm -rf sub/.git; cp -r evil sub/.git; fi",
        'if [ -e sub/.git ]; then echo "gitdir: $PWD/evil" > sub/.git; fi',
        "echo finished",
    ]) + " 2>&1"


def test_positive_control_the_plant_runs_when_written_on_the_host(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    marker = tmp_path / "PWNED"
    subprocess.run(["bash", "-c", " && ".join(commondir_attack(marker))], cwd=repo, env=GIT_ENV, check=True)
    git(repo, "status")
    assert marker.exists()  # the attack is real: without the sandbox git runs it


def test_host_git_status_runs_nothing_a_sandboxed_command_planted_in_the_repository(
        service: ThreadedToolService, workspace: Path, tmp_path: Path) -> None:
    make_repo(workspace)
    module = make_repo(tmp_path / "module")
    added = git(workspace, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(module), "sub")
    assert added.returncode == 0, added.stderr
    assert git(workspace, "commit", "-qm", "add sub").returncode == 0
    before = fingerprint(workspace / ".git")
    sub_git = (workspace / "sub" / ".git").read_text()
    marker = tmp_path / "PWNED"
    result = bash(service, attacks(marker))
    assert "finished" in result.output
    assert fingerprint(workspace / ".git") == before  # git's control data is untouched as a whole
    assert (workspace / "sub" / ".git").read_text() == sub_git
    assert git(workspace, "status").returncode == 0
    git(workspace, "status", "--ignore-submodules=none")
    git(workspace / "sub", "status")
    assert not marker.exists()


def test_git_init_in_a_workspace_without_a_repository_is_refused_in_the_sandbox(
        service: ThreadedToolService, workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    cfg = planted_config(marker)
    result = bash(service, f"git init -q . 2>&1; mkdir -p .git 2>&1; printf '{cfg}' > .git/config 2>&1; "
                           "git status 2>&1; echo finished")
    assert "finished" in result.output
    assert list((workspace / ".git").iterdir()) == []  # an empty placeholder: git on the host ignores it
    git(workspace, "status")
    assert not marker.exists()


def test_git_reads_work_in_the_sandbox_and_a_commit_explains_why_it_cannot(
        service: ThreadedToolService, workspace: Path) -> None:
    make_repo(workspace)
    (workspace / "a.txt").write_text("changed\n")
    status = bash(service, "git status --short && git diff --stat && git log --oneline | wc -l")
    assert status.ok and "M a.txt" in status.output and "1 file changed" in status.output
    commit = bash(service, "git -c user.name=a -c user.email=a@b commit -qam change")
    assert "read-only inside the sandbox" in commit.output and "leave them to the user" in commit.output
    assert git(workspace, "log", "--oneline").stdout.count("\n") == 1


@pytest.mark.parametrize("path", [".git/commondir", ".git/info/attributes", ".git/config.worktree",
                                  ".git/modules/m/config", "sub/.git", "nested/.git/config",
                                  ".ai-coding/sessions/planted.json", ".ai-coding/hooks/plugin.py"])
def test_the_file_tools_refuse_every_path_inside_git_or_the_workspace_state(
        service: ThreadedToolService, workspace: Path, path: str) -> None:
    make_repo(workspace)
    _, result = service.call("s1", "write", json.dumps({"path": path, "content": "planted\n"}))
    assert not result.ok and result.error.code == "protected_path", result
    assert not (workspace / path).exists()


def test_the_workspace_state_is_read_only_to_commands(service: ThreadedToolService, workspace: Path) -> None:
    state = workspace / ".ai-coding"
    result = bash(service, "mkdir -p .ai-coding/hooks 2>&1; echo x > .ai-coding/sessions.json 2>&1; "
                           "mv .ai-coding .ai-coding-moved 2>&1; rm -rf .ai-coding 2>&1; ls -A .ai-coding; echo finished")
    assert "finished" in result.output
    assert state.is_dir() and sorted(p.name for p in state.iterdir()) == [".gitignore"]
    assert not (workspace / ".ai-coding-moved").exists()


def test_the_workspace_state_is_hidden_from_commands(service: ThreadedToolService, workspace: Path) -> None:
    sessions = workspace / ".ai-coding" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "earlier.json").write_text("ATTACHED-EARLIER-5150")  # what an earlier turn saw
    result = bash(service, "cat .ai-coding/sessions/earlier.json 2>&1; ls -A .ai-coding; echo finished")
    assert "finished" in result.output and "ATTACHED-EARLIER-5150" not in result.output
    assert (sessions / "earlier.json").read_text() == "ATTACHED-EARLIER-5150"  # left alone on the host
