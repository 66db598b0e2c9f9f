"""A child's worktree is the agent's ground: what it plants there neither runs on the host when the
loop's own git reads the tree, nor loses the child's work, nor reaches the parent's workspace unseen.

Real loop and tools services (the child's bash in real bwrap, in its worktree), the fake model
driving parent and child; the host is checked afterwards.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.test_subagents import PARENT, child, parent_calls, script, subagent_results
from tests.service.loop.harness import LoopStack, fake, finished, make_stack, status_name, workspace

__all__ = ["fake", "make_stack", "workspace"]

TASK = "prepare the module"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def repo(workspace: Path) -> Path:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.txt").write_text("a1\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "base")
    return workspace


def test_a_childs_hostile_gitmodules_runs_nothing_and_its_outward_links_are_held_back_not_lost(
        make_stack: Callable[..., LoopStack], repo: Path, isolated_home: Path, tmp_path: Path) -> None:
    secret = isolated_home / ".ssh" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("PRIVATE-KEY-5521\n")
    marker = tmp_path / "gitmodules-ran"
    plant = (
        "mkdir -p x && git -C x init -q && git -C x -c user.name=a -c user.email=a@a commit -q --allow-empty -m s"
        f" && printf '[submodule \"x\"]\\n\\tpath = x\\n\\turl = ./x\\n\\tupdate = !touch {marker}\\n' > .gitmodules"
        f" && ln -s {secret} lnk_key && ln -s {secret.parent} lnk_dir && ln -s a.txt lnk_inside"
        " && echo work > work.txt && echo planted")
    stack = make_stack(script(
        parent_calls({"task": TASK, "name": "planter"}, then="Review first."),
        child(TASK, {"tool_calls": [{"name": "bash", "arguments": {"command": plant}}]},
              {"match": "planted", "text": "Prepared."}),
        [{"match": "apply it", "tool_calls": [{"name": "subagent_apply", "arguments": {"run_id": "planter"}}]},
         {"match_anywhere": "subagent_apply", "match": "applied", "text": "Applied."}],
    ), with_tools=True)
    sid, events = stack.turn(f"{PARENT}: prepare")
    [packet] = subagent_results(events)
    assert packet["status"] == "completed", packet
    assert "could not collect" not in (packet.get("isolation_note") or ""), packet  # the child's work is kept
    assert {"work.txt", "lnk_key", "lnk_dir", ".gitmodules"} <= set(packet["files_changed"]), packet
    _, events = stack.turn("apply it", session_id=sid)
    assert status_name(finished(events)) == "completed"
    [result] = [e.tool_finished.result for e in events if e.WhichOneof("event") == "tool_finished"]
    assert result.ok, result.output
    assert (repo / "work.txt").read_text() == "work\n" and (repo / "lnk_inside").is_symlink()
    for held in ("lnk_key", "lnk_dir", ".gitmodules"):
        assert not (repo / held).exists() and not (repo / held).is_symlink(), held
        assert held in result.output  # named to the user, with why and where it stays
    data = json.loads(result.data_json) if result.data_json else {}
    assert sorted(data.get("held", [])) == [".gitmodules", "lnk_dir", "lnk_key"], data
    branch = packet["worktree"]["branch"]
    assert branch in result.output and branch in git(repo, "branch", "--list")  # kept for review
    assert not marker.exists()
    assert all("PRIVATE-KEY-5521" not in json.dumps(r.body) for r in stack.fake.chat_requests)
