"""Reconcile, consolidate, ranking gates and the constraints block as pure functions."""

from __future__ import annotations

import itertools

import numpy as np

from services.memory.consolidate import plan
from services.memory.index import InvertedIndex
from services.memory.model import Action, Candidate, Note, RecallQuery
from services.memory.ranking import rank, set_note_attrs
from services.memory.reconcile import Clock, decide
from services.memory.service import constraints_block
from services.memory.settings import MemorySettings, is_extraction_allowed, writes_allowed
from services.memory.similarity import dedupe_key
from services.memory.tokenizer import tokenize

NOW = 1_800_000_000.0
DAY = 86_400.0


class Notes:
    """An in-memory NoteLookup over a list of notes."""

    def __init__(self, *notes: Note) -> None:
        self.notes = {n.id: n for n in notes}

    def get(self, note_id: str) -> Note | None:
        return self.notes.get(note_id)

    def by_dedupe_key(self, key: str) -> Note | None:
        return next((n for n in self.notes.values() if dedupe_key(n.text) == key), None)

    def similar(self, text: str, kind: str, scene: str) -> list[Note]:
        return [n for n in self.notes.values() if n.kind == kind and n.scene == scene]


def clock() -> Clock:
    counter = itertools.count(1)
    return Clock(NOW, lambda: f"new{next(counter)}")


def note(id_: str, text: str, **kw: object) -> Note:
    return Note(id=id_, text=text, created=kw.pop("created", NOW), updated=kw.pop("updated", NOW), **kw)  # type: ignore[arg-type]


def test_a_new_text_is_added_with_normalized_fields() -> None:
    changes, out = decide(Candidate(text="  Build  with uv ", kind="Decision", importance=9, scene="build"), Notes(), clock())
    assert out.action is Action.ADD and out.note is not None
    assert (out.note.text, out.note.kind, out.note.importance, out.note.scene) == ("Build with uv", "decision", 5, "build")
    assert changes.inserts == [out.note]


def test_an_identical_text_is_a_noop_and_backfills_a_missing_scene() -> None:
    existing = note("a", "Build with uv")
    changes, out = decide(Candidate(text="build with UV."), Notes(existing), clock())
    assert out.action is Action.NOOP and not changes
    changes, out = decide(Candidate(text="Build with uv", kind="decision", scene="发布"), Notes(existing), clock())
    assert out.action is Action.UPDATE and changes.updates[0].scene == "release"


def test_a_near_duplicate_of_the_same_kind_and_scene_updates_instead_of_adding() -> None:
    existing = note("a", "用户偏好:回答使用中文", kind="preference")
    changes, out = decide(Candidate(text="回答使用中文。", kind="preference", importance=4), Notes(existing), clock())
    assert out.action is Action.UPDATE and changes.updates[0].id == "a" and changes.updates[0].importance == 4


def test_a_near_duplicate_in_another_scene_is_kept_apart() -> None:
    existing = note("a", "The build uses uv for packaging", scene="构建")
    lookup = Notes(existing)
    lookup.similar = lambda text, kind, scene: []  # type: ignore[method-assign]  # what the store returns across scenes
    _, out = decide(Candidate(text="The build uses uv for packaging!!", scene="发布"), lookup, clock())
    assert out.action is Action.NOOP  # identical after punctuation folding: exact dedupe ignores scene
    _, out = decide(Candidate(text="The release uses uv for packaging", scene="发布"), lookup, clock())
    assert out.action is Action.ADD


def test_supersede_replaces_the_target_and_update_edits_it() -> None:
    old = note("a", "Deploys go to staging first", pinned=True)
    changes, out = decide(
        Candidate(text="Deploys go straight to production", action=Action.SUPERSEDE, target_id="a"), Notes(old), clock()
    )
    assert out.action is Action.SUPERSEDE and changes.deletes == ["a"] and changes.inserts[0].pinned
    changes, out = decide(
        Candidate(text="Deploys go to staging for one day", action=Action.UPDATE, target_id="a"), Notes(old), clock()
    )
    assert out.action is Action.UPDATE and changes.updates[0].id == "a"


def test_a_rejected_candidate_changes_nothing_and_says_why() -> None:
    changes, out = decide(Candidate(text='"kind": "fact",'), Notes(), clock())
    assert (out.action, out.rejected_reason, bool(changes)) == (Action.NOOP, "json_fragment", False)


def test_extraction_switches_only_stop_writes_when_explicitly_off() -> None:
    assert is_extraction_allowed(MemorySettings(extraction_extractors="harvest"), "memory_write")
    assert is_extraction_allowed(MemorySettings(extraction_extractors=None), "harvest")
    assert not is_extraction_allowed(MemorySettings(extraction_extractors=["harvest"]), "memory_write")
    assert not is_extraction_allowed(MemorySettings(extraction_enabled=False), "harvest")
    assert not writes_allowed(MemorySettings(extraction_enabled=False))


def test_consolidate_merges_promotes_expires_and_evicts_protecting_pins_and_decisions() -> None:
    notes = [
        note("a", "用户偏好:回答使用中文", kind="preference", hits=1),
        note("b", "回答使用中文", kind="preference", hits=2, importance=4),
        note("c", "The build uses uv", hits=4, importance=3),
        note("t", "Ask about the flaky test", kind="open_thread", updated=NOW - 30 * DAY, created=NOW - 30 * DAY),
        note("d", "Use PostgreSQL 16", kind="decision", importance=1, updated=NOW - 400 * DAY),
        note("p", "Never push to main", importance=1, pinned=True, updated=NOW - 400 * DAY),
        note("x", "Old trivia about the printer", importance=1, updated=NOW - 400 * DAY),
        note("y", "Office plants need water weekly", importance=1, updated=NOW - 300 * DAY),
    ]
    changes, report = plan(notes, MemorySettings(max_index_entries=4), NOW)
    assert (report.merged, report.promoted, report.expired, report.evicted) == (1, 2, 1, 2)
    assert set(changes.deletes) == {"a", "t", "x", "y"}
    survivor = next(n for n in changes.updates if n.id == "b")
    assert survivor.hits == 0 and survivor.importance == 5  # 3 hits merged, then spent on a promotion


def _index(notes: list[Note]) -> tuple[InvertedIndex, dict[int, Note]]:
    index = InvertedIndex()
    by_doc = {}
    for doc, n in enumerate(notes):
        index.add(doc, tokenize(n.text))
        set_note_attrs(index, doc, n)
        by_doc[doc] = n
    return index, by_doc


def test_filters_narrow_candidates_before_ranking_so_k_is_not_wasted() -> None:
    facts = [note(f"f{i}", f"database migrations run with alembic step {i}") for i in range(4)]
    decision = note("d", "database migrations need a review", kind="decision", updated=NOW - 90 * DAY)
    index, by_doc = _index([*facts, decision])
    q = RecallQuery(query="database migrations", k=3, kind="decision")
    got = rank(index, by_doc, tokenize(q.query), q, MemorySettings(), NOW)
    assert [h.note.id for h in got.hits] == ["d"]


def test_a_fresh_important_but_unrelated_note_does_not_pass_the_relevance_gate() -> None:
    index, by_doc = _index([
        note("a", "the deploy script lives in ops deploy sh", importance=5),
        note("b", "coverage reports are uploaded from ci", importance=1, updated=NOW - 200 * DAY),
    ])
    q = RecallQuery(query="where are coverage reports uploaded from in ci deploy")
    got = rank(index, by_doc, tokenize(q.query), q, MemorySettings(), NOW)
    assert [h.note.id for h in got.hits] == ["b"]
    assert got.near_misses and got.near_misses[0].note.id == "a"


def test_the_constraints_block_holds_pins_then_decisions_within_budget_and_is_empty_otherwise() -> None:
    assert constraints_block([note("f", "a plain fact")], 600) == ""
    block = constraints_block(
        [note("p", "Never push to main", pinned=True), note("d", "Use uv", kind="decision"), note("e", "y" * 700, kind="decision")],
        600,
    )
    assert block.startswith("<memory-constraints>\n- (fact) Never push to main\n- (decision) Use uv\n")
    assert block.endswith("</memory-constraints>") and len(block) <= 600


def test_each_filter_names_itself_when_it_excludes_a_note() -> None:
    n = note("a", "x", kind="fact", evidence="tool", scope="workspace", scene="构建", updated=NOW - 10 * DAY)
    from services.memory.ranking import failing_filter

    assert failing_filter(n, RecallQuery(query="", kind="decision"), NOW) == "kind"
    assert failing_filter(n, RecallQuery(query="", evidence="model"), NOW) == "evidence"
    assert failing_filter(n, RecallQuery(query="", scope="session"), NOW) == "scope"
    assert failing_filter(n, RecallQuery(query="", scene="发布"), NOW) == "scene"
    assert failing_filter(n, RecallQuery(query="", scene="build"), NOW) == ""  # folded on both sides
    assert failing_filter(n, RecallQuery(query="", since_days=5), NOW) == "since_days"
    assert failing_filter(n, RecallQuery(query="", since_days=0), NOW) == ""


def test_the_vectorized_filters_agree_with_the_per_note_rule() -> None:
    import random

    from services.memory.ranking import failing_filter, filter_masks

    rng = random.Random(7)
    notes = [
        note(f"n{i}", f"text {i}", kind=rng.choice(["fact", "decision"]), evidence=rng.choice(["", "tool", "model"]),
             scope=rng.choice(["workspace", "session"]), scene=rng.choice(["", "构建", "build", "发布"]),
             updated=NOW - rng.uniform(0, 20) * DAY)
        for i in range(200)
    ]
    index, by_doc = _index(notes)
    docs = np.arange(len(notes), dtype=np.int64)
    for q in (RecallQuery(query="", kind="decision", scene="build"), RecallQuery(query="", evidence="tool", since_days=7),
              RecallQuery(query="", scope="session", kind="fact"), RecallQuery(query="", scene="nowhere")):
        masks = filter_masks(index, docs, q, NOW)
        vector = np.logical_and.reduce(list(masks.values()))
        assert [bool(v) for v in vector] == [failing_filter(by_doc[d], q, NOW) == "" for d in range(len(notes))]


def test_the_ranked_score_is_the_documented_mixed_score() -> None:
    from services.memory.ranking import mixed_score

    notes = [note("a", "alembic migrations", importance=4, kind="decision", updated=NOW - 40 * DAY),
             note("b", "alembic only", importance=2, updated=NOW - 3 * DAY)]
    index, by_doc = _index(notes)
    q = RecallQuery(query="alembic migrations")
    got = rank(index, by_doc, tokenize(q.query), q, MemorySettings(relative_band=0.0, min_relevance=0.0), NOW)
    best = max(r.bm25 for r in got.hits)
    for r in got.hits:
        assert abs(r.score - mixed_score(r.bm25 / best, r.note, NOW)) < 1e-9
