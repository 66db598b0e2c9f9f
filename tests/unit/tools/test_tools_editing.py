"""edit's pure helpers: exact replacement, closest candidates, diffs."""

from __future__ import annotations

import pytest

from services.tools.editing import (
    closest_candidates,
    replace_exact,
    to_crlf,
    unified_diff,
    with_line_endings_of,
)
from services.tools.errors import ToolError

SOURCE = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def test_a_unique_match_is_replaced_once() -> None:
    out, count = replace_exact(SOURCE, "a - b", "b - a", False, "m.py")
    assert count == 1 and "return b - a" in out and "return a + b" in out


def test_a_repeated_match_needs_replace_all_and_the_error_lists_the_lines() -> None:
    with pytest.raises(ToolError) as info:
        replace_exact(SOURCE, "(a, b)", "(x, y)", False, "m.py")
    assert info.value.code == "edit_not_unique" and "lines 1, 5" in info.value.message
    out, count = replace_exact(SOURCE, "(a, b)", "(x, y)", True, "m.py")
    assert count == 2 and "(a, b)" not in out


def test_a_failed_match_shows_the_closest_lines_with_numbers() -> None:
    with pytest.raises(ToolError) as info:
        replace_exact(SOURCE, "  return a-b", "x", False, "m.py")
    assert info.value.code == "edit_no_match"
    assert "     6\t    return a - b" in info.value.hint


def test_a_tab_indented_attempt_gets_a_whitespace_hint() -> None:
    assert "tabs versus spaces" in closest_candidates(SOURCE, "\treturn a + b")


def test_the_diff_shows_the_changed_line() -> None:
    diff = unified_diff(SOURCE, SOURCE.replace("a + b", "a + b + 0"), "m.py")
    assert "-    return a + b\n" in diff and "+    return a + b + 0\n" in diff and diff.startswith("--- a/m.py")


def test_crlf_helpers_convert_bare_lf_only_and_follow_a_file_that_is_crlf_throughout() -> None:
    assert to_crlf("a\nb\r\nc") == "a\r\nb\r\nc"
    assert with_line_endings_of("x\r\ny\r\n", "p\nq\n") == "p\r\nq\r\n"
    assert with_line_endings_of("x\r\ny\n", "p\nq\n") == "p\nq\n"  # mixed: leave the content alone
    assert with_line_endings_of("x\ny\n", "p\nq\n") == "p\nq\n"
    assert with_line_endings_of("x\r\ny\r\n", "p\r\nq\n") == "p\r\nq\n"  # the content chose its own
