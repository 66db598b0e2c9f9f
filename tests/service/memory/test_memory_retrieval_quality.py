"""Retrieval quality on a labelled corpus, through a real SQLite store and the production ranking.

Prints R@1, R@3, FP@5, paraphrase@3 and no-answer rejection (run with -s to see
them) and fails below the spec's gates: R@3 >= 0.80 and FP@5 <= 0.36.

Definitions: R@k = share of answerable queries with a relevant note among the
first k returned hits; FP@5 = per query, the share of the returned top-5 that is
not relevant (0 when nothing is returned), averaged over every query, no-answer
queries included; no-answer rejection = no-answer queries that return nothing.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from services.memory.model import Note, RecallQuery
from services.memory.ranking import rank
from services.memory.settings import MemorySettings
from services.memory.store import MemoryStore
from services.memory.tokenizer import tokenize

CORPUS = Path(__file__).resolve().parents[2] / "data" / "memory" / "corpus.json"
NOW = 1_800_000_000.0
R3_GATE = 0.80
FP5_GATE = 0.36


@dataclass
class Scores:
    r1: float
    r3: float
    fp5: float
    paraphrase_hits: int
    paraphrases: int
    rejected: int
    no_answer: int
    queries: int


def evaluate(store: MemoryStore, queries: list[dict[str, object]], settings: MemorySettings) -> Scores:
    """Run every query through the production ranking (no hit counting) and score it."""
    r1 = r3 = 0
    fp: list[float] = []
    answerable = para = para_hits = no_answer = rejected = 0
    for item in queries:
        relevant = set(item["relevant"])  # type: ignore[call-overload]
        q = RecallQuery(query=str(item["query"]), k=5)
        with store.reading():
            got = rank(store.index, store.notes, tokenize(q.query), q, settings, NOW)
        ids = [h.note.id for h in got.hits]
        fp.append(sum(1 for i in ids[:5] if i not in relevant) / len(ids[:5]) if ids else 0.0)
        if not relevant:
            no_answer += 1
            rejected += not ids
            continue
        answerable += 1
        r1 += bool(ids[:1] and ids[0] in relevant)
        hit3 = bool(relevant & set(ids[:3]))
        r3 += hit3
        if item["paraphrase"]:
            para += 1
            para_hits += hit3
    return Scores(r1 / answerable, r3 / answerable, sum(fp) / len(fp), para_hits, para, rejected, no_answer, len(queries))


def load_corpus(short_dir: Path) -> tuple[MemoryStore, list[dict[str, object]]]:
    data = json.loads(CORPUS.read_text(encoding="utf-8"))
    store = MemoryStore(short_dir / "memory.db")
    store.insert_many(
        Note(
            id=n["id"], text=n["text"], kind=n["kind"], importance=n["importance"],
            created=NOW - n["age_days"] * 86_400.0, updated=NOW - n["age_days"] * 86_400.0,
        )
        for n in data["notes"]
    )
    return store, data["queries"]


def test_the_corpus_is_big_enough_and_mixed() -> None:
    data = json.loads(CORPUS.read_text(encoding="utf-8"))
    queries = data["queries"]
    assert len(queries) >= 100
    assert sum(1 for q in queries if q["paraphrase"]) >= 12
    assert sum(1 for q in queries if not q["relevant"]) >= 10
    assert any("\u4e00" <= ch <= "\u9fff" for q in queries for ch in q["query"])
    ids = {n["id"] for n in data["notes"]}
    assert all(set(q["relevant"]) <= ids for q in queries)


def test_retrieval_quality_meets_the_spec_gates(short_dir: Path) -> None:
    store, queries = load_corpus(short_dir)
    started = time.perf_counter()
    s = evaluate(store, queries, MemorySettings())
    elapsed = time.perf_counter() - started
    print(
        f"\nmemory retrieval quality ({s.queries} queries, {elapsed * 1000:.0f} ms): "
        f"R@1 {s.r1:.2f}  R@3 {s.r3:.2f} (gate >= {R3_GATE})  FP@5 {s.fp5:.3f} (gate <= {FP5_GATE})  "
        f"paraphrase@3 {s.paraphrase_hits}/{s.paraphrases}  no-answer rejected {s.rejected}/{s.no_answer}"
    )
    store.close()
    assert s.r3 >= R3_GATE
    assert s.fp5 <= FP5_GATE


def test_the_relative_band_is_what_keeps_false_positives_down(short_dir: Path) -> None:
    store, queries = load_corpus(short_dir)
    with_band = evaluate(store, queries, MemorySettings())
    without = evaluate(store, queries, MemorySettings(relative_band=0.0))
    store.close()
    print(f"\nFP@5 with relative_band 0.55: {with_band.fp5:.3f}; without: {without.fp5:.3f}")
    assert with_band.fp5 < without.fp5
