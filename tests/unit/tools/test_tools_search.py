"""glob patterns and grep over real files: gitignore, symlinks, ripgrep/Python parity."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from services.tools.schemas import GlobArgs, GrepArgs
from services.tools.search import format_hit, glob_files, glob_to_regex, grep_files


@pytest.mark.parametrize(("pattern", "path", "hit"), [
    ("**/*.py", "a.py", True), ("**/*.py", "x/y/a.py", True), ("*.py", "x/a.py", False),
    ("src/*.ts", "src/a.ts", True), ("src/*.ts", "src/x/a.ts", False), ("*.{js,jsx}", "a.jsx", True),
    ("a?.txt", "ab.txt", True), ("[!a]*.md", "a.md", False), ("docs/**", "docs/x/y.md", True),
])
def test_glob_patterns_follow_shell_rules(pattern: str, path: str, hit: bool) -> None:
    assert bool(glob_to_regex(pattern).match(path)) is hit


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("search")
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "build").mkdir()
    (root / ".hidden").mkdir()
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "src" / ".gitignore").write_text("generated.py\n")
    (root / "src" / "main.py").write_text("import os\nTODO = 1\n" + "x" * 500 + " TODO\n")
    (root / "src" / "pkg" / "util.py").write_text("# TODO: split\n")
    (root / "src" / "generated.py").write_text("TODO generated\n")
    (root / "build" / "out.py").write_text("TODO build\n")
    (root / "debug.log").write_text("TODO log\n")
    (root / ".hidden" / "h.py").write_text("TODO hidden\n")
    (root / "blob.bin").write_bytes(b"TODO\0binary")
    (root / "a-b.txt").write_text("TODO dash\n")
    (root / "huge.txt").write_bytes(b"TODO huge\n" * 1_100_000)  # over 10 MB: skipped by both engines
    outside = tmp_path / "outside.py"
    outside.write_text("TODO outside\n")
    (root / "src" / "escape.py").symlink_to(outside)
    os.utime(root / "src" / "pkg" / "util.py", (2_000_000_000, 2_000_000_000))
    return root


def test_glob_skips_ignored_files_filters_escaping_symlinks_and_lists_newest_first(tree: Path) -> None:
    out = glob_files(GlobArgs("**/*.py"), [tree])
    paths = out.data["paths"]
    assert paths[0] == "src/pkg/util.py"
    assert set(paths) == {"src/pkg/util.py", "src/main.py", ".hidden/h.py"}
    assert out.data["symlinks_filtered"] == 1


def test_grep_prints_path_line_text_and_cuts_long_lines(tree: Path) -> None:
    out = grep_files(GrepArgs("TODO"), [tree], None)
    lines = out.output.splitlines()
    assert "src/pkg/util.py:1: # TODO: split" in lines
    long = next(line for line in lines if line.startswith("src/main.py:3:"))
    assert long == format_hit("src/main.py", 3, "x" * 500 + " TODO") and len(long) < 330


def test_grep_skips_hidden_binary_ignored_and_symlinked_files(tree: Path) -> None:
    text = grep_files(GrepArgs("TODO"), [tree], None).output
    for absent in ("generated", "build", "log", "hidden", "binary", "outside", "huge"):
        assert absent not in text, absent


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep not installed")
@pytest.mark.parametrize("args", [
    {"pattern": "TODO"}, {"pattern": "todo", "case_insensitive": True}, {"pattern": "TODO", "path": "src"},
    {"pattern": "TODO", "glob": "*.py"}, {"pattern": "TODO", "max_results": 2}, {"pattern": "^import"},
])
def test_ripgrep_and_the_python_fallback_print_the_same_hits(tree: Path, args: dict[str, Any]) -> None:
    with_rg = grep_files(GrepArgs(**args), [tree], shutil.which("rg"))
    fallback = grep_files(GrepArgs(**args), [tree], None)
    assert with_rg.output == fallback.output and with_rg.limit_hit == fallback.limit_hit
    assert with_rg.data["engine"] == "ripgrep" and fallback.data["engine"] == "python"


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep not installed")
def test_a_pattern_ripgrep_rejects_is_an_invalid_arguments_error_naming_why(tree: Path) -> None:
    from services.tools.errors import ToolError

    with pytest.raises(ToolError) as info:
        grep_files(GrepArgs("(?=TODO)"), [tree], shutil.which("rg"))
    assert info.value.code == "invalid_arguments" and "look-around" in info.value.message


def test_a_glob_with_a_reversed_range_is_an_invalid_arguments_error() -> None:
    from services.tools.errors import ToolError

    with pytest.raises(ToolError) as info:
        glob_to_regex("[z-a].py")
    assert info.value.code == "invalid_arguments"


@pytest.mark.parametrize(("pattern", "path", "hit"), [
    ("[a-c].txt", "b.txt", True), ("[a-c].txt", "-.txt", False), ("[-a].txt", "-.txt", True),
    ("x\\*.txt", "x*.txt", True), ("x\\*.txt", "xy.txt", False), ("[(].txt", "(.txt", True),
])
def test_glob_classes_and_escapes(pattern: str, path: str, hit: bool) -> None:
    assert bool(glob_to_regex(pattern).match(path)) is hit
