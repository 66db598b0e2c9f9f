"""Recall ranking: filters before ranking, BM25, the two gates, near misses.

Everything here is a pure function of an index snapshot, the notes, the query
and the clock. BM25 only orders; it never gates on its own (its length
normalization lifts short low-information notes to the top), so the absolute
gate is idf-weighted coverage of the known query terms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.memory.index import InvertedIndex
from services.memory.model import Note, RecallQuery
from services.memory.scenes import fold_scene
from services.memory.settings import MemorySettings

W_RANK = 0.55
W_RECENCY = 0.20
W_IMPORTANCE = 0.15
W_KIND = 0.10
RECENCY_HALF_LIFE_DAYS = 30.0
SECONDS_PER_DAY = 86_400.0
NEAR_MISS_LIMIT = 3

KIND_WEIGHT: dict[str, float] = {
    "decision": 1.0,
    "preference": 0.9,
    "convention": 0.9,
    "fact": 0.8,
    "lesson": 0.8,
    "open_thread": 0.5,
}


@dataclass
class Ranked:
    """One scored candidate."""

    doc: int
    note: Note
    bm25: float
    relevance: float
    score: float
    matched: list[str]
    cosine: float | None = None
    why: str = ""


@dataclass
class Ranking:
    """The outcome of one ranking pass."""

    hits: list[Ranked]
    near_misses: list[Ranked]
    terms_known: list[str]
    terms_unknown: list[str]
    candidates: int = 0
    passed_relevance: int = 0
    filtered_out: dict[str, int] = field(default_factory=dict)


def failing_filter(note: Note, query: RecallQuery, now: float) -> str:
    """The first filter parameter that excludes ``note`` ("" when it passes all)."""
    if query.kind and note.kind != query.kind:
        return "kind"
    if query.evidence and note.evidence != query.evidence:
        return "evidence"
    if query.scope and note.scope != query.scope:
        return "scope"
    if query.scene and fold_scene(note.scene) != fold_scene(query.scene):
        return "scene"
    if query.since_days > 0:
        stamp = note.updated or note.created
        if now - stamp > query.since_days * SECONDS_PER_DAY:
            return "since_days"
    return ""


def recency(note: Note, now: float) -> float:
    """1.0 for a note touched now, halving every 30 days."""
    stamp = max(note.updated, note.created, note.last_used)
    age_days = max(0.0, now - stamp) / SECONDS_PER_DAY
    return float(0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS))


def mixed_score(rank_term: float, note: Note, now: float) -> float:
    """Rank + recency + importance + kind weight, in [0, 1]."""
    importance = min(max(note.importance, 0), 5) / 5.0
    kind = KIND_WEIGHT.get(note.kind, 0.6)
    return W_RANK * rank_term + W_RECENCY * recency(note, now) + W_IMPORTANCE * importance + W_KIND * kind


def coverage(index: InvertedIndex, matched: list[str], known: list[str]) -> float:
    """idf-weighted share of the known query terms that a note contains."""
    denominator = sum(index.idf(t) for t in known)
    if denominator <= 0:
        return 0.0
    return sum(index.idf(t) for t in matched) / denominator


def _minmax(values: dict[int, float]) -> dict[int, float]:
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    span = high - low
    return {d: (v - low) / span if span > 0 else 1.0 for d, v in values.items()}


def _rrf(lexical: dict[int, float], semantic: dict[int, float], k: int) -> dict[int, float]:
    fused: dict[int, float] = {}
    for ranking in (lexical, semantic):
        order = sorted(ranking, key=lambda d: (-ranking[d], d))
        for position, doc in enumerate(order, start=1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + position)
    best = max(fused.values(), default=0.0)
    return {d: v / best for d, v in fused.items()} if best > 0 else fused


def rank_terms(
    bm25: dict[int, float], cosines: dict[int, float] | None, settings: MemorySettings
) -> dict[int, float]:
    """The rank part of the mixed score; without a semantic signal it is BM25 over the best BM25."""
    if cosines is None:
        best = max(bm25.values(), default=0.0)
        return {d: s / best if best > 0 else 0.0 for d, s in bm25.items()}
    lexical = {d: bm25.get(d, 0.0) for d in set(bm25) | set(cosines)}
    semantic = {d: cosines.get(d, 0.0) for d in lexical}
    if settings.recall_fusion == "rrf":
        return _rrf(lexical, semantic, settings.rrf_k)
    lex, sem = _minmax(lexical), _minmax(semantic)
    return {d: 0.5 * lex[d] + 0.5 * sem[d] for d in lexical}


def rank(
    index: InvertedIndex,
    notes: dict[int, Note],
    terms: list[str],
    query: RecallQuery,
    settings: MemorySettings,
    now: float,
    cosines: dict[int, float] | None = None,
) -> Ranking:
    """Filter, score, gate and cut to k. ``cosines`` (doc -> cosine) is the optional semantic signal."""
    unique = list(dict.fromkeys(terms))
    known = [t for t in unique if index.df(t) > 0]
    unknown = [t for t in unique if index.df(t) == 0]

    def keep(doc: int) -> bool:
        return failing_filter(notes[doc], query, now) == ""

    bm25, matched = index.score(unique, keep)
    ranks = rank_terms(bm25, cosines, settings)
    scored: list[Ranked] = []
    for doc, rank_term in ranks.items():
        note = notes[doc]
        got = matched.get(doc, [])
        scored.append(
            Ranked(
                doc=doc,
                note=note,
                bm25=bm25.get(doc, 0.0),
                relevance=coverage(index, got, known),
                score=mixed_score(rank_term, note, now),
                matched=got,
                cosine=None if cosines is None else cosines.get(doc, 0.0),
            )
        )
    scored.sort(key=lambda r: (-r.score, r.note.id))
    min_cosine = settings.embeddings.min_cosine

    def relevant(r: Ranked) -> bool:
        if r.relevance >= settings.min_relevance:
            return True
        return r.cosine is not None and r.cosine >= min_cosine

    passing = [r for r in scored if relevant(r)]
    top = passing[0].score if passing else 0.0
    hits: list[Ranked] = []
    misses: list[Ranked] = []
    for r in scored:
        if not relevant(r):
            r.why = "below_min_relevance"
            misses.append(r)
        elif r.score < settings.relative_band * top:
            r.why = "below_relative_band"
            misses.append(r)
        elif len(hits) < query.k:
            hits.append(r)
    misses.sort(key=lambda r: (-r.relevance, -r.score, r.note.id))
    return Ranking(
        hits=hits,
        near_misses=misses[:NEAR_MISS_LIMIT],
        terms_known=known,
        terms_unknown=unknown,
        candidates=len(scored),
        passed_relevance=len(passing),
    )


def filtered_out(
    index: InvertedIndex, notes: dict[int, Note], terms: list[str], query: RecallQuery,
    settings: MemorySettings, now: float,
) -> dict[str, int]:
    """How many notes passed the relevance gate but were excluded by each filter parameter."""
    unique = list(dict.fromkeys(terms))
    known = [t for t in unique if index.df(t) > 0]
    _, matched = index.score(unique)
    counts: dict[str, int] = {}
    for doc, got in matched.items():
        reason = failing_filter(notes[doc], query, now)
        if reason and coverage(index, got, known) >= settings.min_relevance:
            counts[reason] = counts.get(reason, 0) + 1
    return counts
