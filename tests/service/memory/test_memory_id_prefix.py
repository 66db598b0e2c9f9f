"""`ai-coding memory show|pin|forget` take an id prefix, as their help says; one matching several
notes is refused with the ids it matches."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest
from ai_coding.v1 import memory_pb2 as pb

from services.memory.service import matching_ids
from tests.service.memory.memory_harness import ServiceProcess, running_service
from tests.service.memory.test_memory_cli import cli


@pytest.fixture(scope="module")
def service() -> Iterator[ServiceProcess]:
    with running_service() as svc:
        yield svc


def test_a_prefix_names_one_note_and_a_too_short_one_names_none() -> None:
    ids = ["0193ab11", "0193ab22", "77ff00aa"]
    assert matching_ids(ids, "77ff") == ["77ff00aa"]
    assert matching_ids(ids, "0193ab") == ["0193ab11", "0193ab22"]
    assert matching_ids(ids, "77f") == []
    assert matching_ids(ids, "0193ab22") == ["0193ab22"]


def test_show_pin_and_forget_take_a_unique_prefix(service: ServiceProcess) -> None:
    with tempfile.TemporaryDirectory() as ws:
        note = service.stub.WriteNote(pb.WriteNoteRequest(workspace=ws, note=pb.NoteCandidate(
            text="Releases are tagged vX.Y.Z", kind="convention")), timeout=10).note
        prefix = note.id[:8]
        shown = cli(service, "show", prefix, "-w", ws)
        assert shown.returncode == 0, shown.stderr
        assert "Releases are tagged vX.Y.Z" in shown.stdout
        assert cli(service, "pin", prefix, "-w", ws).returncode == 0
        assert service.stub.GetNote(pb.GetNoteRequest(workspace=ws, id=note.id), timeout=10).note.pinned
        gone = cli(service, "forget", prefix, "-w", ws, "--yes")
        assert gone.returncode == 0, gone.stderr
        missing = cli(service, "show", note.id, "-w", ws)
        assert missing.returncode == 2 and "note_not_found" in missing.stderr
