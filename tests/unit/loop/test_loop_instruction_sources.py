"""Instruction imports and attachments read only what the user named or the workspace holds (links
resolved); the config, data and state dirs never, except the user's own AGENTS.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from clients.cli.attachments import AttachmentError, collect
from services.loop.core.instructions import load_notes


def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws, config, notes = tmp_path / "ws", tmp_path / "config", tmp_path / "notes"
    for d in (ws, config, notes):
        d.mkdir()
    (config / "secret.yaml").write_text("CONFIG-SECRET")
    (notes / "mine.md").write_text("USER-NAMED")
    (tmp_path / "outside.md").write_text("OUTSIDE")
    return ws, config, notes


def texts(ws: Path, config: Path) -> str:
    return "\n".join(n.text for n in load_notes(ws, None, config, private=[]))


def test_a_workspace_file_imports_nothing_outside_while_the_users_own_file_imports_what_it_names(
        tmp_path: Path) -> None:
    ws, config, notes = layout(tmp_path)
    (ws / "inner.md").write_text(f"INNER\n@{tmp_path}/outside.md\n")
    (ws / "AGENTS.md").write_text(f"WS\n@{config}/secret.yaml\n@../outside.md\n@inner.md\n")
    (ws / "link.md").symlink_to(config / "secret.yaml")
    (ws / "CLAUDE.md").write_text("@link.md\n")
    (config / "AGENTS.md").write_text(f"USER\n@{notes}/mine.md\n@{ws}/inner.md\n@{config}/secret.yaml\n")
    got = texts(ws, config)
    assert "USER" in got and "USER-NAMED" in got and "WS" in got and "INNER" in got
    assert "CONFIG-SECRET" not in got  # not even the user's own file imports from the config dir
    assert "OUTSIDE" not in got  # a workspace file, imported by the user's, still stays inside


def test_an_attachment_through_a_link_out_is_refused_and_a_path_the_user_typed_is_read(
        tmp_path: Path, isolated_home: Path) -> None:
    ws, _, notes = layout(tmp_path)
    (ws / "key").symlink_to(tmp_path / "outside.md")
    (ws / "dir").symlink_to(notes)
    for prompt in ("explain @key", "explain @dir/mine.md"):
        with pytest.raises(AttachmentError, match=r"is not attached: it resolves to .*outside the workspace"):
            collect(prompt, ws, ws)
    (got,) = collect(f"explain @{notes}/mine.md", ws, ws)
    assert got.data == b"USER-NAMED"


def test_a_private_dir_holding_the_workspace_leaves_its_files_readable_but_nothing_else_and_never_the_state(
        tmp_path: Path) -> None:
    from services.kernel.sources import refusal

    ws = tmp_path / "ws"
    (ws / ".ai-coding").mkdir(parents=True)
    (ws / "a.txt").write_text("a")
    (tmp_path / "config.yaml").write_text("k")
    private = [("the user config", str(tmp_path))]
    assert refusal(ws / "a.txt", ws, private=private) == ""
    assert "inside the user config" in refusal(tmp_path / "config.yaml", ws, private=private)
    assert "ai-coding state" in refusal(ws / ".ai-coding" / "x", ws, private=private)
