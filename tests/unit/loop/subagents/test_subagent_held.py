"""What subagent_apply holds back: links leaving the parent's workspace (followed through its tree)."""

from __future__ import annotations

from pathlib import Path

from services.loop.subagents.held import link_leaves, parse_raw


def test_a_link_leaving_the_workspace_is_held_whether_absolute_relative_or_through_an_existing_link(
        tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "out").symlink_to(tmp_path)
    assert link_leaves(str(repo), "key", str(tmp_path / "secret"))
    assert link_leaves(str(repo), "pkg/key", "../../secret")
    assert link_leaves(str(repo), "key", "out/secret")  # via a link already in the parent's tree
    assert not link_leaves(str(repo), "pkg/a", "../pkg/b") and not link_leaves(str(repo), "a", str(repo / "b"))
    assert link_leaves(str(repo), "pkg/a", "../top.txt", boundary=str(repo / "pkg"))  # the workspace is a subdir


def test_the_raw_diff_lists_added_and_changed_entries_with_their_mode_and_blob() -> None:
    raw = (":000000 120000 0000 aaaa A\0lnk_key\0:100644 100644 bbbb cccc M\0a.txt\0"
           ":100644 000000 dddd 0000 D\0gone.txt\0")
    assert parse_raw(raw) == [("120000", "aaaa", "lnk_key"), ("100644", "cccc", "a.txt")]
