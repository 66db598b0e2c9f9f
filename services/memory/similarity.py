"""Near-duplicate detection: lead phrases stripped, then a character-level ratio."""

from __future__ import annotations

import difflib
import re

NEAR_DUPLICATE = 0.80
"""Two notes of the same kind and scene at or above this similarity fold into one."""

_LEAD = re.compile(
    r"^\s*(?:(?:note|fact|decision|preference|remember|fyi|important)\s*[:：-]\s*|"
    r"(?:the )?user (?:prefers|wants|said|asked)(?: that| to)?\s*[:：,，]?\s+|"
    r"we (?:decided|agreed)(?: that| to)?\s*[:：,，]?\s+|it was decided(?: that)?\s*[:：,，]?\s+|"
    r"the project (?:uses|has)\s+|"
    r"(?:用户|我们)?(?:偏好|希望|决定|约定|要求|喜欢|记住)[:：,，]?\s*|注意[:：,，]?\s*|决策[:：]\s*|事实[:：]\s*|"
    r"项目(?:里|中)?(?:使用|用)\s*)",
    re.IGNORECASE,
)
_PUNCT = re.compile(r"[\s。．.,，;；:：!！?？、\"'`“”‘’()（）]+")


def strip_lead(text: str) -> str:
    """``text`` without lead phrases such as "the user prefers" / "用户偏好"."""
    previous = None
    current = text.strip()
    while previous != current:
        previous = current
        current = _LEAD.sub("", current, count=1).strip()
    return current or text.strip()


def dedupe_key(text: str) -> str:
    """Exact-duplicate key: case, whitespace and punctuation folded."""
    return _PUNCT.sub(" ", text.lower()).strip()


def similarity(a: str, b: str) -> float:
    """Similarity in [0, 1] of two note texts after stripping lead phrases."""
    left, right = dedupe_key(strip_lead(a)), dedupe_key(strip_lead(b))
    if not left or not right:
        return 0.0
    if left == right:
        return 1.0
    return difflib.SequenceMatcher(None, left, right, autojunk=False).ratio()


def is_near_duplicate(a: str, b: str) -> bool:
    """similarity(a, b) >= NEAR_DUPLICATE, skipping the full ratio when a cheap upper bound is already below."""
    left, right = dedupe_key(strip_lead(a)), dedupe_key(strip_lead(b))
    if not left or not right:
        return False
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    if matcher.real_quick_ratio() < NEAR_DUPLICATE or matcher.quick_ratio() < NEAR_DUPLICATE:
        return False
    return matcher.ratio() >= NEAR_DUPLICATE
