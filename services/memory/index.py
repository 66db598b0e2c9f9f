"""An in-memory inverted index with BM25 (Okapi) scoring.

Kept current on every write and rebuilt from SQLite when a store opens (from the
persisted terms, in bulk), so a query touches only the posting lists of its own
terms, never every note.
Recall scores posting lists as numpy arrays (cached per term, dropped when the
term's postings change): a pure-Python loop over the postings of common words
measured 13 ms p50 / 165 ms p95 at 10,000 notes (bench/memory.py).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

K1 = 1.2
B = 0.75

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FILTER_ATTRS: tuple[str, ...] = ("kind", "evidence", "scope", "scene")


class InvertedIndex:
    """term -> {doc: term frequency}, plus document lengths."""

    def __init__(self) -> None:
        self.postings: dict[str, dict[int, int]] = {}
        """term -> {doc: term frequency}, for the terms used since a bulk load (read through :meth:`posting`)."""
        self._loaded: dict[str, list[int]] = {}
        """term -> its docs, once per occurrence, as :meth:`add_many` gathered them; a term moves to
        ``postings`` the first time it is used. Gathering lists and counting them when used measured
        about a quarter of the time of filling a dict per term for every note at open (bench/memory.py)."""
        self.doc_terms: dict[int, list[str]] = {}
        """doc -> its terms in order (duplicates kept)."""
        self.doc_len: dict[int, int] = {}
        self.total_len = 0
        self._arrays: dict[str, tuple[IntArray, FloatArray]] = {}
        self._dense_len: FloatArray = np.zeros(1024)
        self.prior_stamp: FloatArray = np.zeros(1024)
        """Per doc: the newest of created / updated / last_used (for recency)."""
        self.prior_static: FloatArray = np.zeros(1024)
        """Per doc: the importance and kind-weight part of the mixed score."""
        self.since_stamp: FloatArray = np.zeros(1024)
        """Per doc: updated (or created) time, for the since_days filter."""
        self.attr: dict[str, IntArray] = {a: np.full(1024, -1, dtype=np.int64) for a in FILTER_ATTRS}
        """Per doc and filter attribute: a code for the value (see :meth:`code`)."""
        self._codes: dict[str, dict[str, int]] = {a: {} for a in FILTER_ATTRS}

    def _grow(self, doc: int) -> None:
        size = len(self._dense_len)
        if doc < size:
            return
        new = max(size * 2, doc + 1)
        for name in ("_dense_len", "prior_stamp", "prior_static", "since_stamp"):
            old = getattr(self, name)
            grown = np.zeros(new)
            grown[: len(old)] = old
            setattr(self, name, grown)
        for key, old_codes in self.attr.items():
            grown_codes = np.full(new, -1, dtype=np.int64)
            grown_codes[: len(old_codes)] = old_codes
            self.attr[key] = grown_codes

    def code(self, attr: str, value: str) -> int:
        """The code of ``value`` for ``attr`` (-2 when no document ever had it)."""
        return self._codes[attr].get(value, -2)

    def set_attrs(self, doc: int, stamp: float, static: float, since: float, values: dict[str, str]) -> None:
        """Record the note-level parts of ``doc``'s mixed score and its filter attributes."""
        self._grow(doc)
        self.prior_stamp[doc] = stamp
        self.prior_static[doc] = static
        self.since_stamp[doc] = since
        for attr in FILTER_ATTRS:
            codes = self._codes[attr]
            self.attr[attr][doc] = codes.setdefault(values[attr], len(codes))

    def set_attrs_many(
        self, docs: list[int], stamps: list[float], statics: list[float], sinces: list[float],
        values: dict[str, list[str]],
    ) -> None:
        """:meth:`set_attrs` for many documents at once (``values`` maps each attribute to one value per doc)."""
        if not docs:
            return
        self._grow(max(docs))
        at = np.asarray(docs, dtype=np.int64)
        self.prior_stamp[at] = stamps
        self.prior_static[at] = statics
        self.since_stamp[at] = sinces
        for attr in FILTER_ATTRS:
            codes = self._codes[attr]
            self.attr[attr][at] = [codes.setdefault(v, len(codes)) for v in values[attr]]

    def __len__(self) -> int:
        return len(self.doc_terms)

    def posting(self, term: str) -> dict[int, int] | None:
        """``term``'s postings {doc: term frequency}, or None when no document holds it."""
        plist = self.postings.get(term)
        if plist is None:
            loaded = self._loaded.pop(term, None)
            if loaded is None:
                return None
            # Counter keeps first-seen order: the docs stay in the order they were added.
            plist = self.postings[term] = Counter(loaded)
        return plist

    def add(self, doc: int, terms: Iterable[str]) -> None:
        """Index ``doc`` (replacing what it held before)."""
        if doc in self.doc_terms:
            self.remove(doc)
        held = list(terms)
        self.doc_terms[doc] = held
        self.doc_len[doc] = len(held)
        self._grow(doc)
        self._dense_len[doc] = len(held)
        self.total_len += len(held)
        for term, tf in Counter(held).items():
            plist = self.posting(term)
            if plist is None:
                self.postings[term] = {doc: tf}
            else:
                plist[doc] = tf
            self._arrays.pop(term, None)

    def add_many(self, docs: list[int], term_lists: list[list[str]]) -> None:
        """:meth:`add` for many documents at once: what a store does when it opens.

        One pass with the per-document upkeep hoisted out of the loop: at 100,000
        notes this is the bulk of opening a store (bench/memory.py).
        """
        if self.doc_terms:  # the fast path only fills an empty index
            for doc, terms in zip(docs, term_lists, strict=True):
                self.add(doc, terms)
            return
        if not docs:
            return
        self._grow(max(docs))
        grouped: defaultdict[str, list[int]] = defaultdict(list)
        doc_terms = self.doc_terms
        doc_len = self.doc_len
        lengths: list[int] = []
        for doc, terms in zip(docs, term_lists, strict=True):
            doc_terms[doc] = terms
            doc_len[doc] = len(terms)
            lengths.append(len(terms))
            for term in terms:
                grouped[term].append(doc)
        self._loaded = dict(grouped)
        self._dense_len[np.asarray(docs, dtype=np.int64)] = lengths
        self.total_len += sum(lengths)
        self._arrays.clear()

    def remove(self, doc: int) -> None:
        """Drop ``doc`` from the index (no-op when absent)."""
        held = self.doc_terms.pop(doc, None)
        if held is None:
            return
        self.total_len -= self.doc_len.pop(doc, 0)
        for term in dict.fromkeys(held):
            self._arrays.pop(term, None)
            plist = self.posting(term)
            if plist is not None:
                plist.pop(doc, None)
                if not plist:
                    del self.postings[term]

    def df(self, term: str) -> int:
        """How many documents contain ``term``."""
        plist = self.posting(term)
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
            plist = self.posting(term)
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

    def lengths(self, docs: IntArray) -> FloatArray:
        """The lengths (term counts) of ``docs``."""
        return self._dense_len[docs]

    def posting_arrays(self, term: str) -> tuple[IntArray, FloatArray]:
        """(docs, term frequencies) of ``term``'s posting list as arrays, in posting order (cached)."""
        cached = self._arrays.get(term)
        if cached is None:
            plist = self.posting(term) or {}
            cached = (
                np.fromiter(plist.keys(), dtype=np.int64, count=len(plist)),
                np.fromiter(plist.values(), dtype=np.float64, count=len(plist)),
            )
            self._arrays[term] = cached
        return cached

    def score_arrays(self, terms: list[str]) -> tuple[IntArray, FloatArray, FloatArray]:
        """(docs, bm25, idf sum of matched terms) for every doc holding one of ``terms`` (known terms only)."""
        known = [t for t in dict.fromkeys(terms) if self.posting(t)]
        if not known or not self.doc_terms:
            return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
        avgdl = (self.total_len / len(self.doc_terms)) or 1.0
        docs_parts: list[IntArray] = []
        score_parts: list[FloatArray] = []
        idf_parts: list[FloatArray] = []
        for term in known:
            docs, tf = self.posting_arrays(term)
            idf = self.idf(term)
            norm = K1 * (1 - B + B * self._dense_len[docs] / avgdl)
            docs_parts.append(docs)
            score_parts.append(idf * tf * (K1 + 1) / (tf + norm))
            idf_parts.append(np.full(len(docs), idf))
        all_docs = np.concatenate(docs_parts)
        # Accumulate over the dense doc-number space: a bincount is linear, np.unique would sort.
        idf_dense = np.bincount(all_docs, weights=np.concatenate(idf_parts))
        unique = np.flatnonzero(idf_dense).astype(np.int64)
        bm25 = np.bincount(all_docs, weights=np.concatenate(score_parts))[unique].astype(np.float64)
        return unique, bm25, idf_dense[unique].astype(np.float64)
