"""The glob automaton agrees with the regex translation, and a pattern built to backtrack ends."""

from __future__ import annotations

import pytest

from services.tools.globmatch import automaton_match, expand_braces
from services.tools.search import _pieces, glob_to_regex

PATTERNS = ["**/*.py", "*.py", "src/*.ts", "*.{js,jsx}", "a?.txt", "[!a]*.md", "docs/**", "**/test_*.py",
            "x\\*.txt", "[a-c].txt", "{src,lib}/**/*.{py,pyi}", "**", "*", "a/**/b/**/c", "*a*b*", "{a,{b,c}}d",
            "*a*a*b", "**a**b", "*z?*c*", "x*y*z", "*a*/b*c*", "**/a*b*c", "*/*a*"]
PATHS = ["a.py", "x/y/a.py", "src/a.ts", "src/x/a.ts", "a.jsx", "ab.txt", "a.md", "b.md", "docs/x/y.md",
         "x*.txt", "xy.txt", "b.txt", "src/p/q.pyi", "lib/m.py", "a/b/c", "a/x/b/y/z/c", "zazbz", "cd", "bd", "ad",
         "aab", "ab", "xaxaxb", "q/a/zbzb", "zzqc", "xyyz", "xzy", "za/bzc", "a/bc", "q/aabc", "k/za"]


def _automaton(pattern: str, path: str) -> bool:
    return any(automaton_match([t for t, _ in _pieces(p)], path) for p in expand_braces(pattern))


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_automaton_matches_exactly_what_the_regex_matches(pattern: str) -> None:
    regex = glob_to_regex(pattern)
    for path in PATHS:
        expected = regex.regex.match(path) is not None
        assert _automaton(pattern, path) is expected, (pattern, path)


@pytest.mark.parametrize("pattern", ["*a" * 12 + "*b", "**a" * 12 + "**b", "*[a]" * 12 + "*b"])
def test_a_glob_with_many_stars_against_a_long_name_finishes_without_backtracking(pattern: str) -> None:
    # As a plain regex `*a*a...*b` did not finish in 10 s on one 200-char name (bench/regex_audit.py):
    # stars before a fixed piece take its leftmost place (atomic groups); the rest run as an automaton.
    matcher = glob_to_regex(pattern)
    assert bool(matcher.alternatives) is ("[" in pattern)
    assert not matcher.match("a" * 4000)
    assert matcher.match("a" * 4000 + "b")


def test_braces_expanding_past_the_limit_are_an_invalid_arguments_error() -> None:
    from services.tools.errors import ToolError

    with pytest.raises(ToolError) as info:
        glob_to_regex("*{a,b}*{a,b}*" * 5)
    assert info.value.code == "invalid_arguments"
