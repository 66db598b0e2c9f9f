"""Pure sandbox decisions: the request only tightens, env allow-list, bwrap flags, workspace roots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.tools.config import SandboxConfig, ToolsConfig
from services.tools.errors import WorkspaceError
from services.tools.paths import check_workspace_root
from services.tools.runtime import decide_extra_roots, decide_sandbox
from services.tools.sandbox import bwrap_argv, hidden_mounts, sandbox_env


def config(mode: str = "bwrap", network: bool = False) -> ToolsConfig:
    return ToolsConfig(sandbox=SandboxConfig(mode=mode, network=network))


def test_a_request_cannot_turn_the_sandbox_off() -> None:
    policy, warnings = decide_sandbox(config("bwrap"), "none", False)
    assert policy.mode == "bwrap" and any("keeps bwrap" in w for w in warnings)


def test_a_request_can_turn_the_sandbox_on_when_the_config_has_it_off() -> None:
    policy, warnings = decide_sandbox(config("none"), "bwrap", False)
    assert policy.mode == "bwrap" and warnings == []


def test_mode_none_from_the_config_comes_with_a_degraded_warning() -> None:
    policy, warnings = decide_sandbox(config("none"), "", False)
    assert policy.mode == "none" and any("sandbox is off" in w for w in warnings)


@pytest.mark.parametrize(("configured", "requested", "granted"), [
    (False, True, False), (True, False, False), (True, True, True), (False, False, False), (True, None, True),
    (False, None, False)])
def test_network_needs_the_config_and_no_refusal_from_the_request(configured: bool, requested: bool | None,
                                                                  granted: bool) -> None:
    assert decide_sandbox(config(network=configured), "", requested)[0].network is granted


def test_extra_roots_come_only_from_the_service_config(tmp_path: Path) -> None:
    allowed, other = tmp_path / "allowed", tmp_path / "other"
    allowed.mkdir()
    other.mkdir()
    granted, warnings = decide_extra_roots([str(allowed)], [str(allowed), str(other)])
    assert granted == [allowed.resolve()] and any(str(other) in w for w in warnings)


def test_the_environment_is_an_allow_list_without_secrets() -> None:
    host = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "OPENAI_API_KEY": "sk-1", "GITHUB_TOKEN": "t",
            "MY_SETTING": "x", "SERVICE_PW": "p", "HOME": "/root"}
    env = sandbox_env(host, ["MY_SETTING", "OPENAI_API_KEY", "SERVICE_PW"], ["SERVICE_PW"], "/tmp")
    assert env["PATH"] == "/usr/bin" and env["MY_SETTING"] == "x" and env["HOME"] == "/tmp"
    assert "OPENAI_API_KEY" not in env and "GITHUB_TOKEN" not in env and "SERVICE_PW" not in env


def test_bwrap_flags_isolate_and_protect_git(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    argv = bwrap_argv("bwrap", [root], root, False, [], "true")
    joined = " ".join(argv)
    for flag in ("--new-session", "--die-with-parent", "--unshare-user", "--cap-drop ALL", "--unshare-pid",
                 "--proc /proc", "--unshare-net", "--tmpfs / ", "--ro-bind-try /usr /usr", "--tmpfs /tmp"):
        assert flag in joined, flag
    assert "--ro-bind / /" not in joined  # the host root is never mounted whole: only its visible directories
    assert f"--ro-bind {root}/.git {root}/.git" in joined  # git's control data as a whole
    assert f"--tmpfs {root}/.ai-coding --remount-ro {root}/.ai-coding" in joined  # created, shown empty
    assert argv.index("--tmpfs") < argv.index("--bind")  # the workspace is mounted over the private /tmp
    assert argv.index("--ro-bind-try") < argv.index("--proc")  # a fresh /proc over the host's, not under it
    tail = argv[:argv.index("--chdir")]
    assert tail[-2:] == ["--remount-ro", "/"]  # the root tmpfs goes read-only once everything is mounted in it
    assert "--unshare-net" not in bwrap_argv("bwrap", [root], root, True, [], "true")


@pytest.mark.parametrize("raw", ["/", "relative/dir", "/does/not/exist"])
def test_unusable_workspace_roots_are_refused(raw: str, tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError):
        check_workspace_root(raw, tmp_path / "home")


def test_the_home_directory_itself_is_not_a_workspace(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="too broad"):
        check_workspace_root(str(tmp_path), tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    assert check_workspace_root(str(project), tmp_path / "elsewhere") == project.resolve()


def test_a_root_containing_home_or_a_private_dir_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="contains your home directory"):
        check_workspace_root(str(tmp_path), tmp_path / "users" / "me")
    with pytest.raises(WorkspaceError, match="contains the runtime dir"):
        check_workspace_root(str(tmp_path), Path("/nonexistent-home"), [("the runtime dir", str(tmp_path / "run"))])


def test_an_unknown_sandbox_mode_in_the_config_is_ignored_with_a_warning_naming_the_key() -> None:
    from services.kernel.config import Config
    from services.tools.main import load_tools_config

    config = Config(data={"tools": {"sandbox": {"mode": "off", "network": "yes"}}})
    tools = load_tools_config(config)
    assert tools.sandbox.mode == "bwrap" and tools.sandbox.network is False  # the defaults: sandboxed
    assert any("tools.sandbox.mode" in w and "ignored" in w for w in config.warnings), config.warnings
    assert any("tools.sandbox.network" in w for w in config.warnings), config.warnings


def test_a_root_without_a_repository_gets_an_empty_read_only_git_placeholder(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    argv = " ".join(bwrap_argv("bwrap", [root], root, False, [], "true"))
    assert f"--ro-bind {root}/.git {root}/.git" in argv
    assert (root / ".git").is_dir() and not list((root / ".git").iterdir())


def test_hidden_dirs_inside_a_root_are_masked_after_the_root_is_mounted(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "run").mkdir(parents=True)
    argv = bwrap_argv("bwrap", [root], root, False, [str(root / "run")], "true")
    assert argv.index(str(root / "run")) > argv.index("--bind")
    assert argv[argv.index(str(root / "run")) - 1] == "--tmpfs"


def test_a_dangling_git_link_into_the_root_gets_its_placeholder_at_the_target(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".git").symlink_to("gitdir/inner")  # a command could otherwise create the target
    argv = " ".join(bwrap_argv("bwrap", [root], root, False, [], "true"))
    target = root / "gitdir" / "inner"
    assert target.is_dir() and f"--ro-bind {target} {target}" in argv


def test_placeholders_of_a_service_that_is_gone_are_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    from services.tools import placeholders
    from services.tools.reaper import owner_token

    journal = tmp_path / "journal"
    journal.mkdir()
    gone, live, kept = tmp_path / "gone" / ".git", tmp_path / "live" / ".git", tmp_path / "kept" / ".git"
    for folder in (gone, live, kept):
        folder.mkdir(parents=True)
    (kept / "HEAD").write_text("ref: refs/heads/main\n")
    (journal / "999999999.1").write_text(f"{gone}\n{kept}\n")  # no such process
    (journal / owner_token(os.getppid())).write_text(f"{live}\n")  # a service still running
    try:
        assert placeholders.keep_journal(journal) == 1
        assert not gone.exists() and live.is_dir() and (kept / "HEAD").is_file()
        names = {p.name for p in journal.iterdir()}
        assert owner_token(os.getppid()) in names and "999999999.1" not in names
        made = tmp_path / "mine" / ".git"
        made.mkdir(parents=True)
        placeholders.note_created(made)
        listed = journal / owner_token()
        assert str(made) in listed.read_text().splitlines()
        placeholders.release(placeholders.lease([tmp_path / "mine"]))
        assert not made.exists()
        assert not listed.exists() or str(made) not in listed.read_text().splitlines()
    finally:
        placeholders._journal = None


def test_hidden_mounts_drop_what_an_outer_one_covers_and_keep_a_sibling_sharing_its_prefix(tmp_path: Path) -> None:
    for name in ("ws/state", "ws/state/inner", "priv", "priv/deep", "privx", "priv-2"):
        (tmp_path / name).mkdir(parents=True)
    root = tmp_path / "ws"
    paths = [str(tmp_path / n) for n in ("priv/deep", "privx", "priv", "priv-2", "ws/state/inner", "ws/state")]
    outside, inside = hidden_mounts([*paths, str(tmp_path / "missing"), str(root)], [root])
    assert outside == [str(tmp_path / "priv"), str(tmp_path / "priv-2"), str(tmp_path / "privx")]
    assert inside == [str(root / "state")]
