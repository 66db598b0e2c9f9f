"""Project instructions: AGENTS.md and CLAUDE.md from the root down, the user's file, @imports."""

from __future__ import annotations

from pathlib import Path

from services.loop.core.instructions import MAX_IMPORT_DEPTH, imports_in, load_notes, render_notes


def tree(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "repo"
    (ws / "a" / "b").mkdir(parents=True)
    user = tmp_path / "home" / ".config" / "ai-coding"
    user.mkdir(parents=True)
    return ws, user


def test_both_names_are_read_in_every_directory_from_the_root_down_to_cwd_after_the_users_file(
        tmp_path: Path) -> None:
    ws, user = tree(tmp_path)
    (user / "AGENTS.md").write_text("global")
    (ws / "AGENTS.md").write_text("root agents")
    (ws / "CLAUDE.md").write_text("root claude")
    (ws / "a" / "CLAUDE.md").write_text("a claude")
    (ws / "a" / "b" / "AGENTS.md").write_text("b agents")
    notes = load_notes(ws, ws / "a" / "b", user)
    assert [n.text for n in notes] == ["global", "root agents", "root claude", "a claude", "b agents"]
    assert [n.label for n in notes][1:] == ["AGENTS.md", "CLAUDE.md", "a/CLAUDE.md", "a/b/AGENTS.md"]
    assert [n.text for n in load_notes(ws, None, user)] == ["global", "root agents", "root claude"]


def test_an_import_is_read_relative_to_its_file_once_even_in_a_cycle(tmp_path: Path) -> None:
    ws, user = tree(tmp_path)
    (ws / "AGENTS.md").write_text("see @docs/one.md and `@not/code.md`\n```\n@docs/fenced.md\n```\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "one.md").write_text("one, then @two.md")
    (ws / "docs" / "two.md").write_text("two, back to @../AGENTS.md and @one.md")
    (ws / "docs" / "fenced.md").write_text("never")
    notes = load_notes(ws, ws, user)
    assert [(n.label, n.imported_by) for n in notes] == [
        ("AGENTS.md", ""), ("docs/one.md", "AGENTS.md"), ("docs/two.md", "docs/one.md")]


def test_imports_stop_at_the_depth_limit(tmp_path: Path) -> None:
    ws, user = tree(tmp_path)
    for n in range(MAX_IMPORT_DEPTH + 3):
        (ws / f"n{n}.md").write_text(f"level {n} @n{n + 1}.md")
    (ws / "AGENTS.md").write_text("@n0.md")
    assert len(load_notes(ws, ws, user)) == 1 + MAX_IMPORT_DEPTH


def test_an_import_or_a_symlink_leaving_the_workspace_is_not_read(tmp_path: Path) -> None:
    ws, user = tree(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("PRIVATE KEY")
    (ws / "AGENTS.md").write_text(f"@../secret.txt @{secret} @~/../secret.txt")
    (ws / "a" / "CLAUDE.md").symlink_to(secret)
    text = render_notes(load_notes(ws, ws / "a", user))
    assert "PRIVATE KEY" not in text and "@../secret.txt" in text


def test_the_rendered_notes_are_bounded_overall(tmp_path: Path) -> None:
    ws, user = tree(tmp_path)
    (ws / "AGENTS.md").write_text("x" * 50)
    (ws / "CLAUDE.md").write_text("y" * 50)
    text = render_notes(load_notes(ws, ws, user), limit=60)
    assert text.count("x") == 50 and text.count("y") == 10 and "truncated" in text


def test_mentions_inside_code_are_not_imports() -> None:
    assert imports_in("a @x.md `@y.md` me@mail.org\n~~~\n@z.md\n~~~\n") == ["x.md"]
