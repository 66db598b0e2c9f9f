"""Path resolution and the after-open check that catches symlinks swapped in late."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.tools.errors import ToolError
from services.tools.paths import read_inside, resolve_path, verify_fd_inside


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    return ws.resolve()


def test_relative_paths_resolve_under_the_first_root(root: Path) -> None:
    assert resolve_path("a/b.txt", [root]) == root / "a" / "b.txt"


def test_a_descriptor_that_points_outside_is_refused_and_closed(root: Path) -> None:
    fd = os.open(root.parent / "outside.txt", os.O_RDONLY)
    with pytest.raises(ToolError) as info:
        verify_fd_inside(fd, "x.txt", [root])
    assert info.value.code == "path_outside_workspace"
    with pytest.raises(OSError):
        os.fstat(fd)  # closed by the check


def test_a_final_symlink_swapped_in_after_resolution_is_not_followed(root: Path) -> None:
    target = root / "file.txt"
    target.write_text("inside")
    resolved = resolve_path("file.txt", [root])
    target.unlink()
    target.symlink_to(root.parent / "outside.txt")  # the swap a background job could make
    with pytest.raises(OSError):
        read_inside(resolved, "file.txt", [root])


def test_a_parent_directory_swapped_for_a_symlink_is_caught_after_opening(root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "outside.txt").write_text("inside")
    resolved = resolve_path("sub/outside.txt", [root])
    (root / "sub" / "outside.txt").unlink()
    (root / "sub").rmdir()
    (root / "sub").symlink_to(root.parent)
    with pytest.raises(ToolError) as info:
        read_inside(resolved, "sub/outside.txt", [root])
    assert info.value.code == "path_outside_workspace"
