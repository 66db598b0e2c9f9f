"""The memory service for real: a running `ai-coding serve memory` process over its unix socket."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from ai_coding.v1 import memory_pb2 as pb

from services.kernel.errors import reason_of
from services.kernel.ids import new_id
from services.memory.model import Candidate
from services.memory.reconcile import Clock, decide
from services.memory.store import MemoryStore, db_path
from tests.service.memory.memory_harness import ServiceProcess, running_service


@pytest.fixture(scope="module")
def service() -> Iterator[ServiceProcess]:
    with running_service() as svc:
        yield svc


@pytest.fixture
def ws() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as d:
        yield d


def write(svc: ServiceProcess, ws: str, text: str, **kw: object) -> pb.WriteNoteResponse:
    resp: pb.WriteNoteResponse = svc.stub.WriteNote(
        pb.WriteNoteRequest(workspace=ws, note=pb.NoteCandidate(text=text, **kw)), timeout=10  # type: ignore[arg-type]
    )
    return resp


def recall(svc: ServiceProcess, ws: str, query: str, **kw: object) -> tuple[pb.RecallResponse, dict[str, object]]:
    resp: pb.RecallResponse = svc.stub.Recall(pb.RecallRequest(workspace=ws, query=query, **kw), timeout=10)  # type: ignore[arg-type]
    return resp, json.loads(resp.diagnostics_json)


def test_a_written_note_is_recalled_with_scores_matched_terms_and_rendered_text(service: ServiceProcess, ws: str) -> None:
    assert write(service, ws, "构建使用 uv 管理依赖", kind="decision").action == pb.RECONCILE_ACTION_ADD
    write(service, ws, "The CI runs on GitHub Actions", kind="fact")
    resp, diag = recall(service, ws, "项目怎么构建?")
    assert [h.note.text for h in resp.hits] == ["构建使用 uv 管理依赖"]
    assert resp.hits[0].matched_terms == ["构建"] and resp.hits[0].relevance > 0.25
    assert diag["no_match"] is False and diag["semantic_status"] == "off" and diag["timed_out"] is False
    assert "构建使用 uv 管理依赖" in resp.rendered and resp.hits[0].note.id in resp.rendered
    assert resp.hits[0].note.evidence == "model"


def test_source_message_refs_travel_with_a_note_into_the_rendered_hit(service: ServiceProcess, ws: str) -> None:
    write(service, ws, "Deploys need a change ticket", kind="convention", source_message_ids=["m13", "m14"],
          evidence="tool")
    resp, _ = recall(service, ws, "deploys change ticket")
    assert list(resp.hits[0].note.source_message_ids) == ["m13", "m14"] and resp.hits[0].note.evidence == "tool"
    assert "refs: m13,m14" in resp.rendered


def test_junk_and_task_state_are_refused_with_a_reason_and_not_stored(service: ServiceProcess, ws: str) -> None:
    assert write(service, ws, '[{"text": "CI 跑在').rejected_reason == "json_fragment"
    assert write(service, ws, "下一步:修改 main.py").rejected_reason == "volatile_state"
    assert list(service.stub.ListNotes(pb.ListNotesRequest(workspace=ws), timeout=10).notes) == []


def test_a_miss_explains_itself_with_known_and_unknown_terms_and_the_index_summary(service: ServiceProcess, ws: str) -> None:
    resp, diag = recall(service, ws, "anything")
    assert diag["no_match"] and "no notes at all" in resp.rendered
    write(service, ws, "Releases are tagged from the main branch", kind="convention", scene="release")
    resp, diag = recall(service, ws, "kubernetes cluster")
    assert not resp.hits
    assert diag["terms_unknown"] == ["kubernetes", "cluster"] and diag["no_vocabulary_match"] is True
    assert diag["index"]["count"] == 1 and diag["top_scenes"] == [["release", 1, 0]]  # type: ignore[index]
    assert "kubernetes" in resp.rendered and "Scenes in memory: release" in resp.rendered  # the key, as written


def test_a_filter_that_excludes_the_answer_is_named(service: ServiceProcess, ws: str) -> None:
    write(service, ws, "Releases are tagged from the main branch", kind="convention")
    resp, diag = recall(service, ws, "how are releases tagged", kind="decision")
    assert not resp.hits and diag["filtered_out"] == {"kind": 1}
    assert "kind filter" in resp.rendered


def test_only_the_notes_returned_count_as_a_use(service: ServiceProcess, ws: str) -> None:
    for text in (
        "alembic migrations must run before every deploy",
        "a deploy fails when alembic migrations are missing",
        "the deploy job applies alembic migrations automatically",
        "review alembic migrations in pull requests before a deploy",
    ):
        assert write(service, ws, text).action == pb.RECONCILE_ACTION_ADD
    resp, _ = recall(service, ws, "alembic migrations deploy", k=1)
    assert len(resp.hits) == 1
    notes = service.stub.ListNotes(pb.ListNotesRequest(workspace=ws), timeout=10).notes
    assert sorted(n.hits for n in notes) == [0, 0, 0, 1]
    assert next(n for n in notes if n.hits == 1).id == resp.hits[0].note.id


def test_pin_get_forget_and_the_constraints_block(service: ServiceProcess, ws: str) -> None:
    note = write(service, ws, "Never push directly to main", kind="convention").note
    assert service.stub.GetConstraints(pb.GetConstraintsRequest(workspace=ws), timeout=10).block == ""
    pinned = service.stub.PinNote(pb.PinNoteRequest(workspace=ws, id=note.id, pinned=True), timeout=10).note
    assert pinned.pinned
    block = service.stub.GetConstraints(pb.GetConstraintsRequest(workspace=ws), timeout=10).block
    assert block == "<memory-constraints>\n- (convention) Never push directly to main\n</memory-constraints>"
    assert service.stub.GetNote(pb.GetNoteRequest(workspace=ws, id=note.id), timeout=10).note.pinned
    assert service.stub.ForgetNote(pb.ForgetNoteRequest(workspace=ws, id=note.id), timeout=10).deleted
    with pytest.raises(grpc.RpcError) as err:
        service.stub.GetNote(pb.GetNoteRequest(workspace=ws, id=note.id), timeout=10)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND and reason_of(err.value) == "note_not_found"
    assert "Traceback" not in (err.value.details() or "")


def test_a_relative_workspace_is_refused_with_a_clear_reason(service: ServiceProcess) -> None:
    with pytest.raises(grpc.RpcError) as err:
        service.stub.ListNotes(pb.ListNotesRequest(workspace="relative/dir"), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and reason_of(err.value) == "invalid_argument"
    assert "absolute" in (err.value.details() or "")


def test_reconcile_applies_each_candidate_and_folds_scene_spellings(service: ServiceProcess, ws: str) -> None:
    resp = service.stub.Reconcile(pb.ReconcileRequest(workspace=ws, extractor="harvest", candidates=[
        pb.NoteCandidate(text="记忆模块使用 SQLite 存储", kind="fact", scene="记忆系统"),
        pb.NoteCandidate(text="记忆模块使用 SQLite 存储。", kind="fact", scene="记忆配置"),
        pb.NoteCandidate(text="{broken"),
    ]), timeout=10)
    assert [o.action for o in resp.outcomes] == [pb.RECONCILE_ACTION_ADD, pb.RECONCILE_ACTION_NOOP, pb.RECONCILE_ACTION_NOOP]
    assert resp.outcomes[2].rejected_reason == "json_fragment"
    [note] = service.stub.ListNotes(pb.ListNotesRequest(workspace=ws), timeout=10).notes
    assert note.scene == "memory"  # the key; 记忆模块 is its Chinese label, shown only for display
    resp2, _ = recall(service, ws, "SQLite 存储", scene="记忆配置")
    assert [h.note.id for h in resp2.hits] == [note.id]


def test_a_note_written_by_another_process_is_recalled_without_a_restart(service: ServiceProcess, ws: str) -> None:
    write(service, ws, "Logs rotate daily under var log app")
    recall(service, ws, "logs rotate")  # the service has the store open and indexed
    other = MemoryStore(db_path(Path(ws)))
    other.write(lambda s: decide(
        Candidate(text="Feature flags live in LaunchDarkly"), s, Clock(1.0e9, lambda: new_id("n"))
    ))
    other.close()
    resp, _ = recall(service, ws, "where do feature flags live")
    assert [h.note.text for h in resp.hits] == ["Feature flags live in LaunchDarkly"]


def test_consolidate_merges_near_duplicates_over_the_wire(service: ServiceProcess, ws: str) -> None:
    other = MemoryStore(db_path(Path(ws)))
    other.insert_many([])
    other.close()
    write(service, ws, "The user prefers answers in Chinese", kind="preference")
    store = MemoryStore(db_path(Path(ws)))
    from services.memory.model import Note

    store.insert_many([Note(id=new_id("n"), text="Answers in Chinese.", kind="preference", created=1.0, updated=1.0)])
    store.close()
    report = service.stub.Consolidate(pb.ConsolidateRequest(workspace=ws), timeout=10)
    assert report.merged == 1
    assert len(service.stub.ListNotes(pb.ListNotesRequest(workspace=ws), timeout=10).notes) == 1


def test_archived_messages_are_found_by_history_search(service: ServiceProcess, ws: str) -> None:
    msgs = [
        pb.ArchivedMessage(session_id="s1", index=3, role="user", text="请把数据库迁移到 PostgreSQL 16"),
        pb.ArchivedMessage(session_id="s1", index=4, role="assistant", text="Migrated the schema with alembic"),
        pb.ArchivedMessage(session_id="s2", index=0, role="user", text="alembic downgrade failed"),
    ]
    assert service.stub.ArchiveMessages(pb.ArchiveMessagesRequest(workspace=ws, messages=msgs), timeout=10).archived == 3
    assert service.stub.ArchiveMessages(pb.ArchiveMessagesRequest(workspace=ws, messages=msgs[:1]), timeout=10).archived == 0
    found = service.stub.SearchHistory(pb.SearchHistoryRequest(workspace=ws, query="数据库迁移"), timeout=10).messages
    assert [(m.session_id, m.index) for m in found] == [("s1", 3)]
    found = service.stub.SearchHistory(pb.SearchHistoryRequest(workspace=ws, query="alembic", session_id="s2"), timeout=10).messages
    assert [(m.session_id, m.index, m.role) for m in found] == [("s2", 0, "user")]


def test_the_spec_json_memory_file_is_imported_once_through_the_gates_and_kept(service: ServiceProcess, ws: str) -> None:
    legacy = {"version": 2, "notes": [
        {"text": "The API uses FastAPI", "kind": "fact", "importance": 4, "scene": "build"},
        {"text": '[{"text": "CI 跑在', "kind": "fact"},
        {"text": "下一步: 写测试", "kind": "fact"},
        {"text": "The API uses FastAPI", "kind": "fact"},
    ]}
    (Path(ws) / ".memory").write_text(json.dumps(legacy))
    notes = service.stub.ListNotes(pb.ListNotesRequest(workspace=ws), timeout=10).notes
    assert [(n.text, n.importance, n.scene) for n in notes] == [("The API uses FastAPI", 4, "build")]
    assert (Path(ws) / ".ai-coding" / "memory-legacy.json.bak").read_text() == json.dumps(legacy)
    assert (Path(ws) / ".memory").exists()


def test_a_recall_over_its_budget_still_returns_hits_but_counts_no_use(service: ServiceProcess, ws: str) -> None:
    write(service, ws, "Coverage must stay above 85 percent")
    resp, diag = recall(service, ws, "coverage percent", timeout_seconds=1e-9)
    assert [h.note.text for h in resp.hits] == ["Coverage must stay above 85 percent"]
    assert diag["timed_out"] is True
    [note] = service.stub.ListNotes(pb.ListNotesRequest(workspace=ws), timeout=10).notes
    assert note.hits == 0


def test_a_near_duplicate_write_updates_the_existing_note(service: ServiceProcess, ws: str) -> None:
    first = write(service, ws, "The user prefers answers in Chinese", kind="preference")
    second = write(service, ws, "User prefers: answers in Chinese.", kind="preference", importance=5)
    assert second.action == pb.RECONCILE_ACTION_UPDATE and second.note.id == first.note.id
    assert second.note.importance == 5
    other_kind = write(service, ws, "User prefers: answers in Chinese!", kind="fact")
    assert other_kind.action == pb.RECONCILE_ACTION_NOOP  # identical text folds whatever the kind


def test_a_corrupt_database_is_reported_as_unavailable_with_a_hint(service: ServiceProcess, ws: str) -> None:
    db = db_path(Path(ws))
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a sqlite database" * 100)
    with pytest.raises(grpc.RpcError) as err:
        service.stub.ListNotes(pb.ListNotesRequest(workspace=ws), timeout=10)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert reason_of(err.value) == "memory_store_unavailable"
    assert "move a corrupt memory.db aside" in (err.value.details() or "")
    assert db.read_bytes().startswith(b"this is not a sqlite database")  # nothing overwritten


def test_the_store_files_are_private_to_the_owner(service: ServiceProcess, ws: str) -> None:
    write(service, ws, "Builds use uv")
    assert db_path(Path(ws)).stat().st_mode & 0o077 == 0


def test_an_unknown_action_value_is_a_clear_invalid_argument(service: ServiceProcess, ws: str) -> None:
    with pytest.raises(grpc.RpcError) as err:
        write(service, ws, "Builds use uv", action=42)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unknown reconcile action 42" in (err.value.details() or "")
