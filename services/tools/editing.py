"""Pure helpers for edit/write: exact replacement, closest candidates, diffs."""

from __future__ import annotations

import difflib

from services.tools import limits
from services.tools.errors import ToolError


def replace_exact(content: str, old: str, new: str, replace_all: bool, shown: str) -> tuple[str, int]:
    """``content`` with ``old`` replaced; ``edit_no_match``/``edit_not_unique`` errors say how to retry."""
    if old == "":
        raise ToolError("invalid_arguments", "field `old_string` is empty",
                        "Give the exact text to replace, or use write to create a file.")
    if old == new:
        raise ToolError("invalid_arguments", "`old_string` and `new_string` are identical", "Nothing to change.")
    count = content.count(old)
    if count == 0 and "\r\n" in content and "\n" in old and "\r" not in old:
        # read shows CRLF lines without their \r, so a multi-line old_string never has it:
        # match (and replace) in the file's own line endings.
        old, new = to_crlf(old), to_crlf(new)
        count = content.count(old)
    if count == 0:
        raise ToolError("edit_no_match", f"old_string was not found in {shown}",
                        closest_candidates(content, old))
    if count > 1 and not replace_all:
        lines = match_lines(content, old)
        raise ToolError("edit_not_unique",
                        f"old_string occurs {count} times in {shown} (lines {', '.join(map(str, lines[:10]))})",
                        "Add surrounding lines to old_string so it matches once, or set replace_all to true.")
    if replace_all:
        return content.replace(old, new), count
    return content.replace(old, new, 1), 1


def to_crlf(text: str) -> str:
    """``text`` with every bare LF made CRLF (CRLF pairs already there are kept)."""
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def with_line_endings_of(before: str, content: str) -> str:
    """New content for a file that used CRLF throughout: the same line endings, unless the
    content chose its own (it has a \r somewhere)."""
    if "\r" in content or "\r\n" not in before or before.count("\n") != before.count("\r\n"):
        return content
    return to_crlf(content)


def match_lines(content: str, needle: str) -> list[int]:
    """1-based line numbers where ``needle`` starts."""
    out, start = [], 0
    while (idx := content.find(needle, start)) >= 0:
        out.append(content.count("\n", 0, idx) + 1)
        start = idx + 1
    return out


def closest_candidates(content: str, old: str, count: int = limits.EDIT_CANDIDATES) -> str:
    """A hint showing the file's passages most similar to ``old`` with their line numbers."""
    lines = content.splitlines()
    want = old.splitlines() or [old]
    width = len(want)
    if not lines:
        return "The file is empty; use write to give it content."
    target = "\n".join(w.strip() for w in want)
    scored: list[tuple[float, int]] = []
    for start in range(max(1, len(lines) - width + 1)):
        window = "\n".join(line.strip() for line in lines[start : start + width])
        matcher = difflib.SequenceMatcher(None, target, window, autojunk=False)
        if matcher.real_quick_ratio() < 0.3 or matcher.quick_ratio() < 0.3:
            continue
        scored.append((matcher.ratio(), start))
    scored.sort(key=lambda item: (-item[0], item[1]))
    if not scored:
        return "Nothing in the file resembles old_string; read the file again and copy the text exactly."
    parts = ["Closest passages in the file (copy the exact text, including indentation):"]
    for ratio, start in scored[:count]:
        block = "\n".join(f"{start + i + 1:>6}\t{line}" for i, line in enumerate(lines[start : start + width]))
        parts.append(f"--- lines {start + 1}-{start + width} ({ratio:.0%} similar)\n{block[:1500]}")
    if any(w != w.strip() for w in want) or "\t" in old:
        parts.append("Check tabs versus spaces and trailing whitespace.")
    return "\n".join(parts)


def unified_diff(before: str, after: str, shown: str) -> str:
    """A small unified diff (cut at the diff limit with a marker)."""
    diff = "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=f"a/{shown}", tofile=f"b/{shown}", n=3))
    if len(diff) > limits.DIFF_MAX_CHARS:
        cut = len(diff) - limits.DIFF_MAX_CHARS
        diff = diff[: limits.DIFF_MAX_CHARS] + f"\n[... diff cut: {cut} more characters ...]\n"
    return diff
