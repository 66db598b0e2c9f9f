"""Glob matching in time linear in the path for any pattern the model sends.

A glob translated to a backtracking regex is polynomial in the number of wildcards: ``*a*a*a...*b``
(12 stars) against one 200-character name did not finish in 10 s, holding the GIL all along
(bench/regex_audit.py). A pattern with at most ``REGEX_WILDCARDS`` wildcards keeps the compiled regex
(C speed, at worst quadratic in one path); any other runs as a set-of-states automaton over the
path: O(len(path) x len(pattern)). ``{a,b}`` groups are expanded first (at most ``MAX_EXPANSIONS``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    LITERAL = "literal"
    ONE = "?"
    CLASS = "[...]"
    STAR = "*"
    ANY = "**"
    DIRS = "**/"


@dataclass(frozen=True)
class Token:
    kind: Kind
    char: str = ""
    klass: re.Pattern[str] | None = None


REGEX_WILDCARDS = 2
"""Patterns with at most this many wildcards keep the C regex (worst: quadratic in one path)."""
MAX_EXPANSIONS = 256
_WILD = (Kind.STAR, Kind.ANY, Kind.DIRS)


class TooManyAlternatives(ValueError):
    """``{a,b}`` groups expand to more than ``MAX_EXPANSIONS`` patterns."""


def _skip_class(pattern: str, i: int) -> int:
    """Index after a ``[...]`` class starting at ``i`` (or ``i + 1`` when it has no closing bracket)."""
    end = pattern.find("]", i + 2)
    return i + 1 if end < 0 else end + 1


def expand_braces(pattern: str) -> list[str]:
    """The brace-free patterns ``pattern`` stands for (an unclosed ``{`` closes at the end)."""
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
        elif ch == "[":
            i = _skip_class(pattern, i)
        elif ch == "{":
            alternatives, end = _split_group(pattern, i + 1)
            out: list[str] = []
            for suffix in expand_braces(pattern[end:]):
                for alternative in alternatives:
                    for inner in expand_braces(alternative):
                        out.append(pattern[:i] + inner + suffix)
                        if len(out) > MAX_EXPANSIONS:
                            raise TooManyAlternatives(f"the {{a,b}} groups expand to more than {MAX_EXPANSIONS}"
                                                      " patterns")
            return out
        else:
            i += 1
    return [pattern]


def _split_group(pattern: str, start: int) -> tuple[list[str], int]:
    """The top-level alternatives of the group whose body starts at ``start``, and the index after it."""
    parts: list[str] = []
    depth, i, begin = 0, start, start
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i = _skip_class(pattern, i)
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                parts.append(pattern[begin:i])
                return parts, i + 1
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(pattern[begin:i])
            begin = i + 1
        i += 1
    parts.append(pattern[begin:])
    return parts, len(pattern)


def wildcards(tokens: list[Token]) -> int:
    return sum(1 for t in tokens if t.kind in _WILD)


def _closure(tokens: list[Token], states: set[int]) -> set[int]:
    stack = list(states)
    while stack:
        i = stack.pop()
        if i < len(tokens) and tokens[i].kind in _WILD and i + 1 not in states:
            states.add(i + 1)
            stack.append(i + 1)
    return states


def _step(token: Token, i: int, ch: str, into: set[int]) -> None:
    kind = token.kind
    if kind is Kind.LITERAL:
        if ch == token.char:
            into.add(i + 1)
    elif kind is Kind.ONE:
        if ch != "/":
            into.add(i + 1)
    elif kind is Kind.CLASS:
        if token.klass is not None and token.klass.fullmatch(ch):
            into.add(i + 1)
    elif kind is Kind.STAR:
        if ch != "/":
            into.add(i)
    elif kind is Kind.ANY:
        into.add(i)
    else:  # DIRS: "" or anything ending in "/"
        into.add(i)
        if ch == "/":
            into.add(i + 1)


def automaton_match(tokens: list[Token], path: str) -> bool:
    """Whether ``path`` matches the whole of ``tokens`` (no backtracking)."""
    end = len(tokens)
    states = _closure(tokens, {0})
    for ch in path:
        following: set[int] = set()
        for i in states:
            if i < end:
                _step(tokens[i], i, ch, following)
        if not following:
            return False
        states = _closure(tokens, following)
    return end in states


@dataclass(frozen=True)
class GlobMatcher:
    """A compiled glob: ``match(path)`` is truthy when the whole path matches."""

    pattern: str
    regex: re.Pattern[str]
    alternatives: tuple[list[Token], ...] = ()
    """Set when the automaton answers (too many wildcards for the backtracking regex)."""

    def match(self, path: str) -> bool:
        if not self.alternatives:
            return self.regex.match(path) is not None
        return any(automaton_match(tokens, path) for tokens in self.alternatives)


__all__ = ["GlobMatcher", "Kind", "Token", "TooManyAlternatives", "automaton_match", "expand_braces", "wildcards"]
