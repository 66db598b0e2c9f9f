"""Recall tokenization: Latin words plus CJK character bigrams, with stop words removed.

CJK text has no spaces; overlapping character bigrams are the cheapest
segmentation that still matches a two-character word anywhere in a note.
Function words (的/了/吗/怎么 ...) are cut out first so they neither become
terms nor glue bigrams across them.
"""

from __future__ import annotations

import re

TOKENIZER_VERSION = 1
"""Bump whenever :func:`tokenize` can return other terms for the same text: stores rebuild persisted terms
of any other version when they open (services/memory/persisted.py)."""

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[a-z0-9][a-z0-9_]*")

_LATIN_STOP_TEXT = """a an and are as at be been but by can could did do does doing for from had has have how i if in
    into is it its me my of on or our should so than that the their them then there these they this to
    us was we were what when where which who why will with would you your about any all also just not no
    yes please use used using get set one some"""
LATIN_STOP: frozenset[str] = frozenset(_LATIN_STOP_TEXT.split())

CJK_STOP_WORDS: tuple[str, ...] = (
    "怎么样", "为什么", "是什么", "怎么", "什么", "如何", "哪个", "哪些", "哪里", "我们", "你们", "他们",
    "这个", "那个", "这些", "那些", "一个", "一下", "可以", "需要", "应该", "时候", "现在", "还是",
    "就是", "还有", "以及", "或者", "因为", "所以", "但是", "然后", "如果", "是否", "有没有",
)
CJK_STOP_CHARS: frozenset[str] = frozenset("的了吗呢吧啊呀么是在和与及或把被给从向对也都就还又很再将要会能让请我你他她它这那个有")

_STOP_WORD_RE = re.compile("|".join(sorted(CJK_STOP_WORDS, key=len, reverse=True)))


def _cjk_terms(run: str) -> list[str]:
    out: list[str] = []
    for chunk in _STOP_WORD_RE.split(run):
        segment: list[str] = []
        for ch in [*chunk, " "]:
            if ch == " " or ch in CJK_STOP_CHARS:
                # A lone character between function words is too ambiguous to be a term.
                out.extend(segment[i] + segment[i + 1] for i in range(len(segment) - 1))
                segment = []
            else:
                segment.append(ch)
    return out


def tokenize(text: str) -> list[str]:
    """Terms of ``text`` in order (duplicates kept, for term frequency)."""
    terms: list[str] = []
    for match in _TOKEN.finditer(text.lower()):
        token = match.group(0)
        if "a" <= token[0] <= "z" or "0" <= token[0] <= "9":
            if token not in LATIN_STOP and (len(token) > 1 or token.isdigit()):
                terms.append(token)
        else:
            terms.extend(_cjk_terms(token))
    return terms
