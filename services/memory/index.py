"""An in-memory inverted index with BM25 (Okapi) scoring.

Kept current on every write and rebuilt from SQLite when a store opens, so a
query touches only the posting lists of its own terms, never every note.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable

K1 = 1.2
B = 0.75


class InvertedIndex:
    """term -> {doc: term frequency}, plus document lengths."""

    def __init__(self) -> None:
        self.postings: dict[str, dict[int, int]] = {}
        self.doc_terms: dict[int, Counter[str]] = {}
        self.doc_len: dict[int, int] = {}
        self.total_len = 0

    def __len__(self) -> int:
        return len(self.doc_terms)

    def add(self, doc: int, terms: Iterable[str]) -> None:
        """Index ``doc`` (replacing what it held before)."""
        if doc in self.doc_terms:
            self.remove(doc)
        counts = Counter(terms)
        self.doc_terms[doc] = counts
        length = sum(counts.values())
        self.doc_len[doc] = length
        self.total_len += length
        for term, tf in counts.items():
            self.postings.setdefault(term, {})[doc] = tf

    def remove(self, doc: int) -> None:
        """Drop ``doc`` from the index (no-op when absent)."""
        counts = self.doc_terms.pop(doc, None)
        if counts is None:
            return
        self.total_len -= self.doc_len.pop(doc, 0)
        for term in counts:
            plist = self.postings.get(term)
            if plist is not None:
                plist.pop(doc, None)
                if not plist:
                    del self.postings[term]

    def df(self, term: str) -> int:
        """How many documents contain ``term``."""
        plist = self.postings.get(term)
        return len(plist) if plist else 0

    def idf(self, term: str) -> float:
        """BM25 idf (always positive)."""
        n = len(self.doc_terms)
        df = self.df(term)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def score(
        self, terms: list[str], keep: Callable[[int], bool] | None = None
    ) -> tuple[dict[int, float], dict[int, list[str]]]:
        """BM25 score and matched terms of every document holding a query term and passing ``keep``."""
        scores: dict[int, float] = {}
        matched: dict[int, list[str]] = {}
        if not self.doc_terms:
            return scores, matched
        avgdl = (self.total_len / len(self.doc_terms)) or 1.0
        doc_len = self.doc_len
        verdict: dict[int, bool] = {}
        for term in dict.fromkeys(terms):
            plist = self.postings.get(term)
            if not plist:
                continue
            idf = self.idf(term)
            for doc, tf in plist.items():
                if keep is not None:
                    ok = verdict.get(doc)
                    if ok is None:
                        ok = verdict[doc] = keep(doc)
                    if not ok:
                        continue
                norm = K1 * (1 - B + B * doc_len[doc] / avgdl)
                scores[doc] = scores.get(doc, 0.0) + idf * tf * (K1 + 1) / (tf + norm)
                matched.setdefault(doc, []).append(term)
        return scores, matched
