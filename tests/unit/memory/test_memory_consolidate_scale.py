"""The faster consolidate pieces answer exactly like the straightforward ones they replace.

Each fast path (numpy partner search, character-count and LCS bounds before
difflib, bulk index loading) is compared with the plain computation on seeded
random inputs shaped like notes: many shared words, near-duplicates, ties.
"""

from __future__ import annotations

import random

from services.memory.consolidate import PARTNERS, PROBE_POSTINGS, PROBE_TERMS, _partners
from services.memory.index import InvertedIndex
from services.memory.model import Note
from services.memory.similarity import (
    NEAR_DUPLICATE,
    Comparable,
    lcs_length,
    near_duplicates,
    similarity,
    strip_lead,
)
from services.memory.tokenizer import tokenize

WORDS = ["build", "cache", "deploy", "uv", "pytest", "ruff", "docker", "nginx", "redis", "构建", "发布", "缓存", "日志"]


def lcs_by_table(a: str, b: str) -> int:
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def note_texts(rng: random.Random, count: int) -> list[str]:
    texts: list[str] = []
    for _ in range(count):
        if texts and rng.random() < 0.3:
            base = rng.choice(texts)
            cut = rng.randrange(len(base))
            texts.append(rng.choice([f"Note: {base}", base[:cut] + base[cut + 1 :], f"{base} ok", base.upper()]))
        else:
            texts.append(" ".join(rng.choices(WORDS, k=rng.randint(3, 9))))
    return texts


def partners_by_dict_walk(bucket: list[Note]) -> dict[int, list[int]]:
    """The partner search as a plain BM25 walk over dict postings (how consolidate first did it)."""
    index = InvertedIndex()
    terms = [tokenize(strip_lead(n.text)) for n in bucket]
    for pos, t in enumerate(terms):
        index.add(pos, t)
    out: dict[int, list[int]] = {}
    for pos, t in enumerate(terms):
        shared = sorted((x for x in set(t) if index.df(x) > 1), key=lambda x: (index.df(x), x))
        probe: list[str] = []
        visited = 0
        for term in shared[:PROBE_TERMS]:
            if probe and visited + index.df(term) > PROBE_POSTINGS:
                break
            probe.append(term)
            visited += index.df(term)
        scores, _ = index.score(probe, lambda d, pos=pos: d > pos)  # type: ignore[misc]
        out[pos] = sorted(scores, key=lambda d: (-scores[d], d))[:PARTNERS]
    return out


def test_the_bit_parallel_lcs_matches_the_textbook_table() -> None:
    rng = random.Random(7)
    for _ in range(500):
        a = "".join(rng.choices("abcab 构建发", k=rng.randint(0, 70)))
        b = "".join(rng.choices("abcab 构建发", k=rng.randint(0, 70)))
        assert lcs_length(a, b) == lcs_by_table(a, b)


def test_the_near_duplicate_bounds_never_change_difflibs_answer() -> None:
    rng = random.Random(11)
    texts = note_texts(rng, 300)
    pairs = [(rng.choice(texts), rng.choice(texts)) for _ in range(500)]
    for _ in range(1000):  # edits of every strength, so many pairs sit near the threshold
        text = list(rng.choice(texts))
        for _ in range(rng.randint(0, 12)):
            text[rng.randrange(len(text))] = rng.choice("xyz 构")
        # A reversed text has the same characters (the quick bounds pass) but a short common subsequence.
        pairs.append(("".join(text), rng.choice(texts) if rng.random() < 0.1 else "".join(text[::-1])))
        pairs.append((pairs[-1][0], "".join(text[: rng.randint(1, len(text))])))
    answers = [near_duplicates(Comparable.of(a), Comparable.of(b)) for a, b in pairs]
    assert answers == [similarity(a, b) >= NEAR_DUPLICATE for a, b in pairs]
    assert 50 < sum(answers) < len(pairs) - 50  # both answers are well represented


def test_numpy_partner_search_finds_exactly_the_dict_walks_partners() -> None:
    rng = random.Random(3)
    # Few distinct words, so posting lists pass PROBE_POSTINGS and scores tie often.
    bucket = [Note(id=f"n{i}", text=t) for i, t in enumerate(note_texts(rng, 900))]
    fast = _partners(bucket)
    assert fast == partners_by_dict_walk(bucket)
    assert sum(len(p) for p in fast.values()) > len(bucket)


def test_bulk_loading_gives_the_same_postings_as_adding_note_by_note() -> None:
    texts = note_texts(random.Random(5), 400)
    one_by_one, bulk = InvertedIndex(), InvertedIndex()
    for doc, text in enumerate(texts):
        one_by_one.add(doc, tokenize(text))
    bulk.add_many(list(range(len(texts))), [tokenize(t) for t in texts])
    bulk.remove(17)
    one_by_one.remove(17)
    bulk.add(400, tokenize("deploy nginx with docker"))
    one_by_one.add(400, tokenize("deploy nginx with docker"))
    terms = {t for text in texts for t in tokenize(text)}
    assert all(bulk.posting(t) == one_by_one.posting(t) for t in terms)
    assert (bulk.total_len, len(bulk), bulk.doc_len) == (one_by_one.total_len, len(one_by_one), one_by_one.doc_len)
    assert bulk.score(["docker", "构建"]) == one_by_one.score(["docker", "构建"])
