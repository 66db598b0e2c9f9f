"""Write gates (note shape, volatile task state) and recall query cleaning.

Every write path (harvest, memory_write, JSON import, load) passes the two
gates: a JSON fragment or a field line from a truncated extractor answer is
not knowledge, and "next step / done / current progress" is task state that
goes stale within the hour.
"""

from __future__ import annotations

import re

MAX_NOTE_CHARS = 1000
MIN_NOTE_CHARS = 4
MAX_QUERY_CHARS = 2048

_FRAGMENT_FIRST = frozenset('{}[]"')
_FIELD_LINE = re.compile(r'^\s*"?[A-Za-z_][A-Za-z0-9_]*"?\s*:\s*("|\d|\[|\{|true|false|null)', re.IGNORECASE)

_VOLATILE = re.compile(
    r"(下一步|接下来|已完成|已经完成|当前进度|目前进度|进度[:：]|正在(进行|处理|修改)|待办[:：]|"
    r"临时(路径|文件|目录)|/tmp/|\bnext step\b|\bnext,? i\b|\bi (will|am going to|just)\b|\bin progress\b|"
    r"\bcurrently (working|doing|editing)\b|\bprogress:|\bstep \d+ (done|complete)|\b(done|completed|finished):|"
    r"\btodo:)",
    re.IGNORECASE,
)

VOLATILE_BLOCKS: tuple[str, ...] = (
    "tool_output",
    "memory-constraints",
    "working-memory",
    "task-state",
    "hook-context",
    "environment",
    "mcp-catalog",
)
_BLOCK = re.compile(
    r"<(" + "|".join(re.escape(b) for b in VOLATILE_BLOCKS) + r")(\s[^>]*)?>.*?(</\1>|\Z)",
    re.DOTALL | re.IGNORECASE,
)
# A tag starts with a letter or '/', so "a < b" survives.
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9_:-]*(\s[^<>]*)?/?>")


def shape_rejection(text: str) -> str:
    """Why ``text`` is not a plausible note ("" when it is)."""
    stripped = text.strip()
    if len(stripped) < MIN_NOTE_CHARS:
        return "too_short"
    if len(stripped) > MAX_NOTE_CHARS:
        return "too_long"
    if stripped[0] in _FRAGMENT_FIRST:
        return "json_fragment"
    if _FIELD_LINE.match(stripped):
        return "field_line"
    if stripped.rstrip(",").endswith(("{", "[")):
        return "json_fragment"
    return ""


def is_plausible_note_text(text: str) -> bool:
    """True when ``text`` has the shape of a note (not JSON debris, not empty, not huge)."""
    return shape_rejection(text) == ""


def is_volatile_note(text: str) -> bool:
    """True for transient task state ("next step", "done:", temp paths) that must not be remembered."""
    return bool(_VOLATILE.search(text))


def write_rejection(text: str) -> str:
    """The reason a write is refused by the shape gate or the volatile filter, or ""."""
    shape = shape_rejection(text)
    if shape:
        return shape
    if is_volatile_note(text):
        return "volatile_state"
    return ""


def clean_query_for_recall(query: str) -> str:
    """Strip tool output and volatile tail blocks, then stray tags; cap at 2048 chars.

    Pasted tool output turns tool/output/read into query words, and last turn's
    injected memory block turns old decisions into this turn's query: both are
    removed before tokenizing. Only recall uses this; harvest sees raw text.
    """
    cleaned = _BLOCK.sub(" ", query)
    cleaned = _TAG.sub(" ", cleaned)
    cleaned = re.sub(r"\s+", " ", cleaned).strip()
    return cleaned[:MAX_QUERY_CHARS]
