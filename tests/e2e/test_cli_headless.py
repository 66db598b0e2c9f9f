"""What a Claude Code or Codex user types first, in a real terminal (pexpect) against the real
services and the fake model: ``-p``, a prompt on stdin, ``--continue``, ``--resume PREFIX``,
``@file``, AGENTS.md + CLAUDE.md, and another tool's config.yaml left alone."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.cli.runtime import descendants, pid_alive
from services.fake_model import FakeModelServer

pexpect = pytest.importorskip("pexpect")
pytestmark = pytest.mark.slow

EXE = str(Path(sys.executable).parent / "ai-coding")


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([{"text": "answer from the fake model", "repeat": "forever"}]) as server:
        yield server


@pytest.fixture
def repo(isolated_home: Path, tmp_path: Path, model: FakeModelServer,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A git repository with a user config that points at the fake model; services stopped at the end."""
    config = tmp_path / "user-config.yaml"
    config.write_text(f"default_model: fake\nmodels:\n  fake:\n    provider: generic\n    model: fake-model\n"
                      f"    base_url: {model.url}\n    api_key: k\n    max_retries: 0\nloop:\n  harvest: false\n")
    monkeypatch.setenv("AI_CODING_CONFIG", str(config))
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    yield root
    rdir = Path(os.environ["AI_CODING_RUNTIME_DIR"])
    try:
        sup = int((rdir / "supervisor.pid").read_text())
    except (OSError, ValueError):
        sup = 0
    left = descendants(sup) if sup else []
    subprocess.run([EXE, "down"], capture_output=True, timeout=60, check=False)
    for pid in [*left, *([sup] if sup else [])]:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


def term(args: list[str], cwd: Path, program: str = EXE) -> tuple[int, str]:
    """Run in a pseudo-terminal to its end: (exit status, everything it printed)."""
    child = pexpect.spawn(program, args, cwd=str(cwd), env=dict(os.environ), encoding="utf-8", timeout=300,
                          dimensions=(40, 200))
    child.expect(pexpect.EOF)
    child.close()
    return int(child.exitstatus if child.exitstatus is not None else -1), str(child.before)


def user_text(request: Any) -> str:
    users = [m for m in request.body["messages"] if m["role"] == "user"]
    return str(users[-1]["content"])


def test_print_flag_runs_one_headless_turn_in_the_git_root_and_prints_the_answer(
        repo: Path, model: FakeModelServer) -> None:
    status, out = term(["-p", "say hello"], cwd=repo / "pkg")
    assert status == 0, out
    assert "answer from the fake model" in out
    assert user_text(model.chat_requests[-1]).startswith("say hello")
    assert (repo / ".ai-coding" / "sessions").is_dir() and not (repo / "pkg" / ".ai-coding").exists()


def test_a_prompt_piped_on_stdin_is_read_by_run_dash_and_by_bare_print(repo: Path, model: FakeModelServer) -> None:
    status, out = term(["-c", f"echo 'prompt from a pipe' | {EXE} run -"], cwd=repo, program="bash")
    assert status == 0, out
    assert user_text(model.chat_requests[-1]).startswith("prompt from a pipe")
    status, out = term(["-c", f"echo 'second pipe' | {EXE} -p"], cwd=repo, program="bash")
    assert status == 0, out
    assert user_text(model.chat_requests[-1]).startswith("second pipe")


def test_continue_carries_on_the_latest_session_of_the_workspace(repo: Path, model: FakeModelServer) -> None:
    assert term(["-p", "first question"], cwd=repo)[0] == 0
    status, out = term(["-p", "--continue", "follow-up question"], cwd=repo)
    assert status == 0, out
    contents = [m["content"] for m in model.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert contents[0].startswith("first question") and contents[-1].startswith("follow-up question")
    assert len(list((repo / ".ai-coding" / "sessions").glob("*.meta.json"))) <= 1


def test_a_resume_prefix_matching_several_sessions_lists_them_and_runs_nothing(
        repo: Path, model: FakeModelServer) -> None:
    assert term(["-p", "one"], cwd=repo)[0] == 0
    assert term(["-p", "two"], cwd=repo)[0] == 0
    ids = sorted({p.name.split(".")[0] for p in (repo / ".ai-coding" / "sessions").glob("*.json")})
    assert len(ids) == 2
    prefix = "".join(a for a, _ in itertools.takewhile(lambda pair: pair[0] == pair[1], zip(*ids, strict=True)))
    assert prefix, ids
    asked = len(model.chat_requests)
    status, out = term(["-p", "--resume", prefix, "three"], cwd=repo)
    assert status == 2, out
    assert "matches 2 sessions" in out and all(i in out for i in ids), out
    assert len(model.chat_requests) == asked
    status, out = term(["-p", "-r", ids[1][:len(prefix) + 1], "three"], cwd=repo)
    assert status == 0, out
    contents = [m["content"] for m in model.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert contents[0].startswith("two") and contents[-1].startswith("three")


def test_an_at_file_mention_attaches_the_file_to_the_request(repo: Path, model: FakeModelServer) -> None:
    (repo / "pkg" / "app.py").write_text("def answer():\n    return 42\n")
    status, out = term(["-p", "explain @app.py please"], cwd=repo / "pkg")
    assert status == 0, out
    assert "attached app.py" in out
    sent = user_text(model.chat_requests[-1])
    assert sent.startswith("explain @app.py please")
    assert '<attachment path="app.py">\ndef answer():\n    return 42\n\n</attachment>' in sent


def test_agents_md_at_the_root_and_claude_md_in_a_subfolder_both_reach_the_request(
        repo: Path, model: FakeModelServer) -> None:
    (repo / "AGENTS.md").write_text("Root rule: run pytest -q.\nSee @docs/style.md\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "style.md").write_text("Style rule: no tabs.\n")
    (repo / "pkg" / "CLAUDE.md").write_text("Package rule: keep pkg pure.\n")
    status, out = term(["-p", "hello"], cwd=repo / "pkg")
    assert status == 0, out
    system = model.chat_requests[-1].body["messages"][0]["content"]
    assert '<project-notes file="AGENTS.md">\nRoot rule: run pytest -q.' in system
    assert '<project-notes file="docs/style.md" imported-by="AGENTS.md">\nStyle rule: no tabs.' in system
    assert '<project-notes file="pkg/CLAUDE.md">\nPackage rule: keep pkg pure.' in system
    assert system.index("Root rule") < system.index("Style rule") < system.index("Package rule")


def test_an_unrelated_config_yaml_in_the_repository_leaves_the_run_untouched(
        repo: Path, model: FakeModelServer) -> None:
    (repo / "config.yaml").write_text("default_model: resnet50\nepochs: 90\nai:\n  - layer: conv1\n")
    status, out = term(["-p", "hello"], cwd=repo)
    assert status == 0, out
    assert "answer from the fake model" in out
    assert model.chat_requests[-1].body["model"] == "fake-model"
    assert "resnet50" not in out
