"""Scenes are stored as stable keys and translated only for display; a memory.db written before keys
(tests/data/memory/scenes-v3.db: made by the build before them through its real service, so it holds
`测试` where the user wrote `testing`, and one older spelling) opens with every note intact.

Real `ai-coding serve memory` process and real `ai-coding memory` commands; nothing stands in.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ai_coding.v1 import memory_pb2 as pb

from services.memory.migrations import LATEST
from services.memory.store import db_path
from tests.service.memory.memory_harness import ServiceProcess, running_service
from tests.service.memory.test_memory_cli import cli

OLD_STORE = Path(__file__).resolve().parents[2] / "data" / "memory" / "scenes-v3.db"


@pytest.fixture(scope="module")
def service() -> Iterator[ServiceProcess]:
    with running_service() as svc:
        yield svc


@pytest.fixture
def old_workspace() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d)
        db_path(ws).parent.mkdir(parents=True)
        shutil.copyfile(OLD_STORE, db_path(ws))
        yield ws


def _rows(db: Path, query: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(str(db))
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def test_an_old_store_with_translated_scene_labels_loads_every_note_under_its_key(
        service: ServiceProcess, old_workspace: Path) -> None:
    db = db_path(old_workspace)
    before = dict(_rows(db, "SELECT id, text FROM notes"))
    assert sorted(s for (s,) in _rows(db, "SELECT scene FROM notes")) == sorted(
        ["测试", "测试", "构建", "发布", "前端", "", "memory system"])
    notes = service.stub.ListNotes(pb.ListNotesRequest(workspace=str(old_workspace)), timeout=10).notes
    assert {n.id: n.text for n in notes} == before  # every note, word for word
    assert sorted(n.scene for n in notes) == sorted(["testing", "testing", "build", "release", "前端", "", "memory"])
    # The file now holds the keys; the labels it had are kept beside them.
    assert sorted(s for (s,) in _rows(db, "SELECT scene FROM notes")) == sorted(n.scene for n in notes)
    assert sorted(_rows(db, "SELECT before, after FROM scene_renames")) == sorted([
        ("测试", "testing"), ("测试", "testing"), ("构建", "build"), ("发布", "release"), ("memory system", "memory")])
    assert _rows(db, "SELECT version FROM schema_version") == [(LATEST,)]
    for spelling in ("testing", "测试", "Tests"):  # the key, the old label, another spelling: one filter
        hits = service.stub.Recall(pb.RecallRequest(workspace=str(old_workspace), query="tests pytest Postgres",
                                                    scene=spelling, k=10), timeout=10).hits
        assert sorted(h.note.scene for h in hits) == ["testing", "testing"], spelling


def test_memory_list_shows_the_key_or_the_label_of_the_users_language(
        service: ServiceProcess, old_workspace: Path) -> None:
    english = cli(service, "list", "-w", str(old_workspace), LANG="en_US.UTF-8", LC_ALL="")
    chinese = cli(service, "list", "-w", str(old_workspace), LANG="zh_CN.UTF-8", LC_ALL="")
    assert english.returncode == 0 and chinese.returncode == 0, english.stderr + chinese.stderr
    assert "scenes: build=1, memory=1, release=1, testing=2, 前端=1" in english.stdout, english.stdout
    assert "[testing] Tests run with pytest" in english.stdout and "测试" not in english.stdout
    assert "scenes: 构建=1, 记忆模块=1, 发布=1, 测试=2, 前端=1" in chinese.stdout, chinese.stdout
    as_json = json.loads(cli(service, "list", "-w", str(old_workspace), "--json", LANG="zh_CN.UTF-8").stdout)
    assert sorted(n["scene"] for n in as_json["notes"] if n["scene"]) == [
        "build", "memory", "release", "testing", "testing", "前端"]  # programs get the stable key


def test_a_note_written_as_testing_is_stored_and_shown_as_testing(service: ServiceProcess) -> None:
    with tempfile.TemporaryDirectory() as ws:
        written = service.stub.WriteNote(pb.WriteNoteRequest(workspace=ws, note=pb.NoteCandidate(
            text="Run the unit tests with pytest -q", kind="fact", scene="testing")), timeout=10)
        assert written.note.scene == "testing"
        assert _rows(db_path(Path(ws)), "SELECT scene FROM notes") == [("testing",)]
        shown = cli(service, "show", written.note.id, "-w", ws, LANG="zh_CN.UTF-8", LC_ALL="")
        assert "scene: 测试 (testing)" in shown.stdout, shown.stdout


def test_a_legacy_json_memory_file_with_translated_scenes_imports_under_the_keys(service: ServiceProcess) -> None:
    with tempfile.TemporaryDirectory() as ws:
        legacy = [{"text": "测试覆盖率要求不低于 85%", "kind": "fact", "scene": "测试"},
                  {"text": "发布前先跑完整测试", "kind": "decision", "scene": "发布流程"},
                  {"text": "Docs are built with mkdocs", "kind": "fact", "scene": "docs"}]
        (Path(ws) / ".memory").write_text(json.dumps({"notes": legacy}, ensure_ascii=False), encoding="utf-8")
        notes = service.stub.ListNotes(pb.ListNotesRequest(workspace=ws), timeout=10).notes
        assert {n.text: n.scene for n in notes} == {"测试覆盖率要求不低于 85%": "testing", "发布前先跑完整测试": "release",
                                                    "Docs are built with mkdocs": "docs"}
