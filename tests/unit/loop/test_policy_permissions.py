from __future__ import annotations

from typing import Any

import pytest

from services.loop.policy.guards import compile_bash_policy
from services.loop.policy.permissions import Level, PermissionMode, decide_permission, mcp_gate
from services.loop.policy.settings import BashPolicy


@pytest.mark.parametrize("tool", ["read", "glob", "grep", "job_output", "job_list"])
def test_read_only_service_tools_are_allowed(tool: str) -> None:
    assert decide_permission(tool, {}).level is Level.ALLOW


def test_a_loop_tool_that_declares_allow_in_the_registry_is_allowed() -> None:
    assert decide_permission("todo_write", {}, declared="allow", trusted=True).level is Level.ALLOW


@pytest.mark.parametrize("tool", ["todo_write", "memory_write", "frobnicate"])
def test_a_service_tool_cannot_declare_itself_allowed(tool: str) -> None:
    assert decide_permission(tool, {}, declared="allow").level is Level.WARN


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
    v = decide_permission("bash", {"command": command}, mode=PermissionMode.AUTO)
    assert v.level is Level.DENY, command


def test_ordinary_bash_warns_and_auto_mode_allows_it() -> None:
    assert decide_permission("bash", {"command": "pytest -q"}).level is Level.WARN
    assert decide_permission("bash", {"command": "pytest -q"}, mode=PermissionMode.AUTO).level is Level.ALLOW


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
    v = decide_permission("bash", {"command": "terraform apply"}, {"bash"}, PermissionMode.AUTO, bash_policy=policy)
    assert v.level is Level.DENY
    v = decide_permission("bash", {"command": "git push origin x"}, {"bash"}, PermissionMode.AUTO, bash_policy=policy)
    assert v.level is Level.WARN


def test_readonly_mode_denies_writes_including_bash_that_writes_files() -> None:
    assert decide_permission("edit", {"path": "a"}, mode=PermissionMode.READONLY).level is Level.DENY
    assert decide_permission("bash", {"command": "echo x > f"}, mode=PermissionMode.READONLY).level is Level.DENY
    assert decide_permission("bash", {"command": "ls"}, mode=PermissionMode.READONLY).level is Level.WARN
    assert decide_permission("read", {"path": "a"}, mode=PermissionMode.READONLY).level is Level.ALLOW


def test_a_broken_argument_fails_closed() -> None:
    class Exploding(dict[str, Any]):
        def get(self, *_: object) -> Any:
            raise RuntimeError("boom")

    assert decide_permission("bash", Exploding()).level is Level.DENY


def test_an_mcp_servers_deny_beats_auto_mode_and_an_always_grant() -> None:
    v = mcp_gate("gh", "delete_repo", {"gh__delete_repo": "deny"}, PermissionMode.AUTO, {"mcp:gh__delete_repo"})
    assert v.level is Level.DENY and "gh__delete_repo" in v.reason


def test_an_mcp_servers_allow_beats_read_only_mode() -> None:
    assert mcp_gate("gh", "list", {"gh__list": "allow"}, PermissionMode.READONLY, ()).level is Level.ALLOW


def test_read_only_mode_denies_an_mcp_tool_the_server_leaves_to_the_session() -> None:
    assert mcp_gate("gh", "create_issue", {}, PermissionMode.READONLY, {"mcp:gh__create_issue"}).level is Level.DENY


def test_an_mcp_tool_asks_once_then_an_always_answer_allows_it_for_the_session() -> None:
    first = mcp_gate("gh", "create_issue", {"gh__create_issue": "warn"}, PermissionMode.CONFIRM, ())
    assert first.level is Level.WARN and first.grant_key == "mcp:gh__create_issue"
    again = mcp_gate("gh", "create_issue", {}, PermissionMode.CONFIRM, [first.grant_key])
    assert again.level is Level.ALLOW and again.reason == "allowed always this session"
    assert mcp_gate("gh", "other", {}, PermissionMode.CONFIRM, [first.grant_key]).level is Level.WARN


def test_auto_mode_allows_an_mcp_tool_without_a_grant() -> None:
    v = mcp_gate("gh", "create_issue", {}, PermissionMode.AUTO, ())
    assert (v.level, v.reason) == (Level.ALLOW, "auto mode")


def test_a_session_opens_in_the_mode_permissions_saved_unless_the_client_asks_for_auto() -> None:
    from services.loop.policy.permissions import opening_mode

    assert opening_mode(False, "auto") == "auto"
    assert opening_mode(False, "readonly") == "readonly"
    assert opening_mode(False, "") == "confirm"
    assert opening_mode(False, "bogus") == "confirm"
    assert opening_mode(True, "confirm") == "auto"


def test_an_approval_says_what_the_tool_would_do() -> None:
    assert decide_permission("webfetch", {"url": "https://example.com"}, declared="warn", trusted=True).reason == (
        "fetches a web page (network access)")
    assert decide_permission("edit", {"path": "a"}).reason == "changes a file"
    assert decide_permission("job_stop", {"job_id": "j1"}).reason == "stops a background command"
