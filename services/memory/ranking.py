"""Recall ranking: filters before ranking, BM25, the two gates, near misses.

Everything here is a pure function of an index snapshot, the notes, the query
and the clock. BM25 only orders; it never gates on its own (its length
normalization lifts short low-information notes to the top), so the absolute
gate is idf-weighted coverage of the known query terms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from services.memory.index import BoolArray, FloatArray, IntArray, InvertedIndex
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


def static_prior(note: Note) -> float:
    """The importance and kind-weight part of the mixed score (no clock involved)."""
    importance = min(max(note.importance, 0), 5) / 5.0
    return W_IMPORTANCE * importance + W_KIND * KIND_WEIGHT.get(note.kind, 0.6)


def set_note_attrs(index: InvertedIndex, doc: int, note: Note) -> None:
    """Record what ranking and filtering need to know about ``note`` besides its terms."""
    index.set_attrs(
        doc, max(note.created, note.updated, note.last_used), static_prior(note), note.updated or note.created,
        {"kind": note.kind, "evidence": note.evidence, "scope": note.scope, "scene": fold_scene(note.scene)},
    )


def set_note_attrs_many(index: InvertedIndex, docs: list[int], notes: list[Note]) -> None:
    """:func:`set_note_attrs` for many notes at once (``notes[i]`` is document ``docs[i]``)."""
    index.set_attrs_many(
        docs,
        [max(n.created, n.updated, n.last_used) for n in notes],
        [static_prior(n) for n in notes],
        [n.updated or n.created for n in notes],
        {
            "kind": [n.kind for n in notes], "evidence": [n.evidence for n in notes],
            "scope": [n.scope for n in notes], "scene": [fold_scene(n.scene) for n in notes],
        },
    )


def _rank_arrays(
    bm25: FloatArray, cosines: FloatArray | None, settings: MemorySettings
) -> FloatArray:
    """The rank part of the mixed score over aligned candidate arrays.

    Without a semantic signal it is BM25 over the best BM25 (RRF needs two
    rankings to fuse, so it falls back to this too); with one, "blend" averages
    the min-max normalized BM25 and cosine, "rrf" sums 1 / (rrf_k + position).
    """
    if cosines is None:
        best = float(bm25.max()) if len(bm25) else 0.0
        return bm25 / best if best > 0 else np.zeros(len(bm25))
    if settings.recall_fusion == "rrf":
        fused = np.zeros(len(bm25))
        for values in (bm25, cosines):
            order = np.lexsort((np.arange(len(values)), -values))
            positions = np.empty(len(values))
            positions[order] = np.arange(1, len(values) + 1)
            fused += 1.0 / (settings.rrf_k + positions)
        best = float(fused.max()) if len(fused) else 0.0
        return fused / best if best > 0 else fused

    def minmax(v: FloatArray) -> FloatArray:
        low, high = float(v.min()), float(v.max())
        return (v - low) / (high - low) if high > low else np.ones(len(v))

    return 0.5 * minmax(bm25) + 0.5 * minmax(cosines)


def _top(
    pool: IntArray, k: int, docs: IntArray, score: FloatArray, first: FloatArray | None = None
) -> list[int]:
    """The best ``k`` positions of ``pool``: by ``first`` (if given) then score, descending; doc breaks ties.

    Only the entries that can make the cut are sorted, so a query matching most
    of 100,000 notes does not sort them all.
    """
    if k <= 0 or len(pool) == 0:
        return []
    key = score[pool] if first is None else first[pool]
    if len(pool) > 4 * k:
        cutoff = np.partition(key, len(key) - k)[len(key) - k]
        pool = pool[key >= cutoff]
    keys: list[FloatArray | IntArray] = [docs[pool], -score[pool]]
    if first is not None:
        keys.append(-first[pool])
    return [int(i) for i in pool[np.lexsort(tuple(keys))][:k]]


def rank(
    index: InvertedIndex,
    notes: dict[int, Note],
    terms: list[str],
    query: RecallQuery,
    settings: MemorySettings,
    now: float,
    cosines: dict[int, float] | None = None,
) -> Ranking:
    """Filter, score, gate and cut to k. ``cosines`` (doc -> cosine, filtered notes) is the optional semantic signal.

    Scores are computed as arrays over the candidates; Python objects are built
    only for the hits and near misses.
    """
    unique = list(dict.fromkeys(terms))
    known = [t for t in unique if index.df(t) > 0]
    unknown = [t for t in unique if index.df(t) == 0]
    docs, bm25, idf_sum = index.score_arrays(known)
    masks = filter_masks(index, docs, query, now)
    if masks:
        keep = np.logical_and.reduce(list(masks.values()))
        docs, bm25, idf_sum = docs[keep], bm25[keep], idf_sum[keep]
    cos: FloatArray | None = None
    if cosines is not None:
        extra = np.array(sorted(set(cosines) - set(docs.tolist())), dtype=np.int64)
        docs = np.concatenate([docs, extra])
        bm25 = np.concatenate([bm25, np.zeros(len(extra))])
        idf_sum = np.concatenate([idf_sum, np.zeros(len(extra))])
        cos = np.array([cosines.get(int(d), 0.0) for d in docs])
    denominator = sum(index.idf(t) for t in known)
    relevance = idf_sum / denominator if denominator > 0 else np.zeros(len(docs))
    stamps = index.prior_stamp[docs]
    recency_v = 0.5 ** (np.maximum(0.0, now - stamps) / SECONDS_PER_DAY / RECENCY_HALF_LIFE_DAYS)
    score = W_RANK * _rank_arrays(bm25, cos, settings) + W_RECENCY * recency_v + index.prior_static[docs]
    relevant = relevance >= settings.min_relevance
    if cos is not None:
        relevant |= cos >= settings.embeddings.min_cosine
    top = float(score[relevant].max()) if relevant.any() else 0.0
    in_band = relevant & (score >= settings.relative_band * top)
    hit_idx = _top(np.flatnonzero(in_band), query.k, docs, score)
    miss_order = _top(np.flatnonzero(~in_band), NEAR_MISS_LIMIT, docs, score, relevance)

    def build(i: int, why: str = "") -> Ranked:
        doc = int(docs[i])
        held = index.doc_terms.get(doc, [])
        return Ranked(
            doc=doc, note=notes[doc], bm25=float(bm25[i]), relevance=float(relevance[i]), score=float(score[i]),
            matched=[t for t in known if t in held], cosine=None if cos is None else float(cos[i]), why=why,
        )

    return Ranking(
        hits=[build(i) for i in hit_idx],
        near_misses=[
            build(int(i), "below_min_relevance" if not relevant[i] else "below_relative_band") for i in miss_order
        ],
        terms_known=known,
        terms_unknown=unknown,
        candidates=len(docs),
        passed_relevance=int(relevant.sum()),
    )


def filter_masks(index: InvertedIndex, docs: IntArray, query: RecallQuery, now: float) -> dict[str, BoolArray]:
    """Per active filter parameter, which of ``docs`` pass it (same rules as :func:`failing_filter`)."""
    masks: dict[str, BoolArray] = {}
    wanted = {"kind": query.kind, "evidence": query.evidence, "scope": query.scope, "scene": fold_scene(query.scene)}
    for attr, value in wanted.items():
        if value:
            masks[attr] = index.attr[attr][docs] == index.code(attr, value)
    if query.since_days > 0:
        masks["since_days"] = now - index.since_stamp[docs] <= query.since_days * SECONDS_PER_DAY
    return masks


def filtered_out(index: InvertedIndex, terms: list[str], query: RecallQuery, settings: MemorySettings,
                 now: float) -> dict[str, int]:
    """How many notes passed the relevance gate but were excluded, counted under the first filter that excluded each."""
    known = [t for t in dict.fromkeys(terms) if index.df(t) > 0]
    docs, _, idf_sum = index.score_arrays(known)
    denominator = sum(index.idf(t) for t in known)
    if not len(docs) or denominator <= 0:
        return {}
    undecided = idf_sum / denominator >= settings.min_relevance
    counts: dict[str, int] = {}
    for param, passing in filter_masks(index, docs, query, now).items():
        excluded = undecided & ~passing
        if excluded.any():
            counts[param] = int(excluded.sum())
        undecided &= passing
    return counts
