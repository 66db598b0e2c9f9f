"""Bounds on what the command policy reads, so no command can make the check itself slow.

A command comes from the model, so every check over it must be linear in its length:

- ``oversize_reason``: Linux passes at most ``MAX_ARG_STRLEN`` (128 KiB, with its NUL) in one
  argument, and ``bash -c COMMAND`` is one; a longer command could never run, so it is refused
  before anything parses it.
- ``is_fork_bomb``: ``name(){ name|name& }`` found in one left-to-right pass. The old pattern
  ``(\\S+)\\s*\\(\\)\\s*\\{\\s*\\1...`` backtracked over every suffix of a run of non-space
  characters: quadratic (20k chars 2.0 s, 100 KB ~48 s).
- ``ParseBudget``: re-parsing (``eval eval ...``, ``sh -c`` inside ``sh -c``, ``$($($(...)))``)
  re-reads text; the budget caps the characters read in all, so a crafted command ends with
  ``TooComplex`` (a refusal) instead of quadratic work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_COMMAND_BYTES = 128 * 1024 - 1
"""Longest command ``bash -c`` can receive (Linux MAX_ARG_STRLEN is 131072 bytes with the NUL)."""
PARSE_BUDGET_FACTOR = 4
"""Characters the parser may read per character of the command (nested re-parses included)."""
PARSE_BUDGET_FLOOR = 65_536
_NAME_MAX = 128
"""Longest function name the fork-bomb check compares (bounded so each candidate costs O(1))."""

_FUNC_HEAD = re.compile(r"\(\)\s*\{\s*")
_FORK_BODY = re.compile(rf"([^\s|&]{{1,{_NAME_MAX}}})\s*\|\s*([^\s|&]{{1,{_NAME_MAX}}})\s*&\s*\}}")


class TooComplex(Exception):
    """The command needs more parsing than its budget allows (nesting built to be slow to check)."""


@dataclass
class ParseBudget:
    """Characters left for the lexer to read, shared by every nested parse of one command."""

    left: int

    @classmethod
    def for_text(cls, text: str) -> ParseBudget:
        """The budget for parsing ``text``; ``TooComplex`` when it is too long to run at all."""
        too_long = oversize_reason(text)
        if too_long:
            raise TooComplex(too_long)
        return cls(PARSE_BUDGET_FACTOR * len(text) + PARSE_BUDGET_FLOOR)

    def charge(self, chars: int) -> None:
        self.left -= chars
        if self.left < 0:
            raise TooComplex("nested too deeply to check (eval, sh -c or $( ) re-read the text too often); "
                             "write the commands to a script file and run it")


def oversize_reason(command: str) -> str | None:
    """Why ``command`` is too long to run at all, or None."""
    if len(command) * 4 <= MAX_COMMAND_BYTES:  # cheap: cannot be over in UTF-8
        return None
    size = len(command.encode("utf-8", "surrogatepass"))
    if size <= MAX_COMMAND_BYTES:
        return None
    return (f"the command is {size:,} bytes; Linux passes at most {MAX_COMMAND_BYTES + 1:,} bytes to `bash -c`, "
            "so write it to a script file (write) and run that file")


def is_fork_bomb(command: str) -> bool:
    """True when ``command`` defines a function that pipes itself into itself in the background."""
    for head in _FUNC_HEAD.finditer(command):
        body = _FORK_BODY.match(command, head.end())
        if body is None or body.group(1) != body.group(2):
            continue
        end = head.start()
        while end > 0 and command[end - 1].isspace():  # each run of spaces precedes one head: linear
            end -= 1
        if command.endswith(body.group(1), 0, end):
            return True
    return False


__all__ = ["MAX_COMMAND_BYTES", "ParseBudget", "TooComplex", "is_fork_bomb", "oversize_reason"]
