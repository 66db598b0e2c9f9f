"""Consolidate: merge near-duplicates, promote used notes, expire stale threads, evict by value.

``plan`` is pure: it takes the notes and the clock and returns the changes and
the counts. Pinned notes and decisions are never evicted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np

from services.memory.index import K1, B, FloatArray, IntArray, InvertedIndex
from services.memory.model import ConsolidateReport, Note
from services.memory.ranking import SECONDS_PER_DAY, recency
from services.memory.settings import MemorySettings
from services.memory.similarity import Comparable, near_duplicates, strip_lead
from services.memory.store import Changes
from services.memory.tokenizer import tokenize

PROMOTE_AT_HITS = 3
PARTNERS = 5
PROBE_TERMS = 6
PROBE_POSTINGS = 256


def _survivor_order(note: Note) -> tuple[bool, int, int, float]:
    return (note.pinned, note.importance, note.hits, note.updated)


def _probe(df: Counter[str], terms: list[str]) -> list[str]:
    """The note's rarest shared terms, stopping once their postings would pass PROBE_POSTINGS (one always kept)."""
    shared = sorted((x for x in set(terms) if df[x] > 1), key=lambda x: (df[x], x))
    probe: list[str] = []
    visited = 0
    for term in shared[:PROBE_TERMS]:
        if probe and visited + df[term] > PROBE_POSTINGS:
            break
        probe.append(term)
        visited += df[term]
    return probe


def _best(docs: IntArray, scores: FloatArray, k: int) -> list[int]:
    """The ``k`` docs with the highest score, the lower doc first on a tie (ties at the cut all considered)."""
    if len(docs) > 4 * k:
        cutoff = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= cutoff
        docs, scores = docs[keep], scores[keep]
    return [int(d) for d in docs[np.lexsort((docs, -scores))[:k]]]


def _partners(bucket: list[Note]) -> dict[int, list[int]]:
    """For each note, the few later notes of its bucket most likely to be near-duplicates of it.

    The same probe as a write's near-duplicate search: BM25 over the note's rarest
    terms (lead phrases stripped), top PARTNERS only. Comparing every pair measured
    144 s for 10,000 notes. The first probe term is kept however common it is, so a
    note made only of common words still walks a posting list that grows with the
    bucket. So each probe term's BM25 weights are computed once per bucket, and a
    note takes the slice of later notes (found by bisection: docs ascend in bucket
    order) and sums them in numpy: the same arithmetic in the same order as
    InvertedIndex.score, so the partners are exactly the ones a dict walk finds
    (bench/memory.py compares both).
    """
    index = InvertedIndex()
    terms = [tokenize(strip_lead(n.text)) for n in bucket]
    index.add_many(list(range(len(bucket))), terms)
    df = Counter(term for t in terms for term in set(t))  # = index.df, without building every posting dict
    avgdl = (index.total_len / len(index)) or 1.0
    weights: dict[str, tuple[IntArray, FloatArray]] = {}

    def weighted(term: str) -> tuple[IntArray, FloatArray]:
        got = weights.get(term)
        if got is None:
            docs, tf = index.posting_arrays(term)
            norm = K1 * (1 - B + B * index.lengths(docs) / avgdl)
            got = weights[term] = (docs, index.idf(term) * tf * (K1 + 1) / (tf + norm))
        return got

    acc = np.zeros(len(bucket))
    out: dict[int, list[int]] = {}
    for pos, t in enumerate(terms):
        later: list[tuple[IntArray, FloatArray]] = []
        for term in _probe(df, t):
            docs, w = weighted(term)
            start = int(np.searchsorted(docs, pos, side="right"))
            later.append((docs[start:], w[start:]))
        if len(later) == 1:
            out[pos] = _best(*later[0], PARTNERS)
        elif later:
            for docs, w in later:
                acc[docs] += w
            found = np.unique(np.concatenate([docs for docs, _ in later]))
            out[pos] = _best(found, acc[found], PARTNERS)
            acc[found] = 0.0
        else:
            out[pos] = []
    return out


def merge_groups(notes: list[Note]) -> list[tuple[Note, list[Note]]]:
    """Groups of near-duplicates within the same kind and scene: (survivor, absorbed)."""
    buckets: dict[tuple[str, str], list[Note]] = {}
    for note in notes:
        buckets.setdefault((note.kind, note.scene), []).append(note)
    groups: list[tuple[Note, list[Note]]] = []
    for bucket in buckets.values():
        partners = _partners(bucket)
        texts = [Comparable.of(n.text) for n in bucket]
        taken: set[int] = set()
        for i in range(len(bucket)):
            if i in taken:
                continue
            group = [i] + [
                j for j in sorted(partners.get(i, ())) if j not in taken and near_duplicates(texts[i], texts[j])
            ]
            if len(group) > 1:
                taken.update(group)
                ordered = sorted((bucket[k] for k in group), key=_survivor_order, reverse=True)
                groups.append((ordered[0], ordered[1:]))
    return groups


def eviction_value(note: Note, now: float) -> float:
    """How much a note is worth keeping: importance, use and freshness."""
    return note.importance + min(note.hits, 10) * 0.3 + 2.0 * recency(note, now)


def plan(notes: list[Note], settings: MemorySettings, now: float) -> tuple[Changes, ConsolidateReport]:
    """The changes one consolidate pass makes."""
    report = ConsolidateReport()
    changes = Changes()
    alive: dict[str, Note] = {n.id: n for n in notes}
    for survivor, absorbed in merge_groups(notes):
        merged = replace(
            survivor,
            hits=survivor.hits + sum(n.hits for n in absorbed),
            importance=max(n.importance for n in [survivor, *absorbed]),
            source_message_ids=list(dict.fromkeys(
                [*survivor.source_message_ids, *(s for n in absorbed for s in n.source_message_ids)]
            )),
            updated=now,
        )
        alive[survivor.id] = merged
        for n in absorbed:
            alive.pop(n.id, None)
            changes.deletes.append(n.id)
        report.merged += len(absorbed)
    ttl = settings.open_thread_ttl_days * SECONDS_PER_DAY
    for note in list(alive.values()):
        stale = now - max(note.updated, note.last_used, note.created) > ttl
        if note.kind == "open_thread" and not note.pinned and stale:
            del alive[note.id]
            changes.deletes.append(note.id)
            report.expired += 1
        elif note.hits >= PROMOTE_AT_HITS and note.importance < 5:
            # Hits are spent on the promotion so the next pass needs fresh use to promote again.
            alive[note.id] = replace(note, importance=note.importance + 1, hits=note.hits - PROMOTE_AT_HITS)
            report.promoted += 1
    excess = len(alive) - settings.max_index_entries
    if excess > 0:
        evictable = [n for n in alive.values() if not n.pinned and n.kind != "decision"]
        evictable.sort(key=lambda n: (eviction_value(n, now), n.updated, n.id))
        for note in evictable[:excess]:
            del alive[note.id]
            changes.deletes.append(note.id)
            report.evicted += 1
    original = {n.id: n for n in notes}
    changes.updates = [n for n in alive.values() if original.get(n.id) != n]
    return changes, report
