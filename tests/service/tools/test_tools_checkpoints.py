"""Checkpoints on a real tool service: one before every changing call, restores byte for byte
(shell side effects included), redo, the user's edits kept and named, pruning."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from ai_coding.v1 import tools_pb2

from tests.support.tools_harness import ThreadedToolService
from tests.support.trees import tree_hash, tree_listing

SHELL_STEP = ("rm -rf src && sed -i 's/old/new/' notes.txt && mv docs manual && chmod 600 run.sh "
              "&& printf '\\000\\001\\002' > blob.bin && echo u > untracked.txt && ln -s manual/a.md link.md "
              "&& mkdir -p empty/inner && rmdir was_empty")


def seed(root: Path) -> None:
    (root / "src" / "pkg").mkdir(parents=True)
    for i in range(5):
        (root / "src" / "pkg" / f"m{i}.py").write_text(f"value = {i}\n")
    (root / "notes.txt").write_text("old line\nkeep\n")
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("# a\n")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    (root / "was_empty").mkdir()
    (root / "old_link").symlink_to("notes.txt")
    (root / "image.png").write_bytes(bytes(range(256)) * 4)


def bash(svc: ThreadedToolService, command: str, call_id: str = "c1") -> dict[str, object]:
    _, result = svc.call("s1", "bash", json.dumps({"command": command}), call_id=call_id)
    assert result.ok, result.output
    data: dict[str, object] = json.loads(result.data_json)
    return data


def restore(svc: ThreadedToolService, checkpoint_id: str, baseline_checkpoint_id: str = "",
            overwrite_changed: bool = False, dry_run: bool = False) -> tools_pb2.RestoreCheckpointResponse:
    response: tools_pb2.RestoreCheckpointResponse = svc.stub.RestoreCheckpoint(tools_pb2.RestoreCheckpointRequest(
        session_id="s1", checkpoint_id=checkpoint_id, baseline_checkpoint_id=baseline_checkpoint_id,
        overwrite_changed=overwrite_changed, dry_run=dry_run), timeout=60)
    return response


def test_a_shell_step_is_undone_byte_for_byte_and_redone(service: ThreadedToolService, workspace: Path) -> None:
    seed(workspace)
    before = tree_hash(workspace)
    data = bash(service, SHELL_STEP)
    checkpoint = str(data["checkpoint"])
    after = tree_hash(workspace)
    assert after != before and not (workspace / "src").exists()

    undone = restore(service, checkpoint)
    assert tree_hash(workspace) == before, tree_listing(workspace)
    assert undone.redo_checkpoint_id and not undone.kept and not undone.not_restorable
    assert (workspace / "image.png").read_bytes() == bytes(range(256)) * 4
    assert os.readlink(workspace / "old_link") == "notes.txt"

    restore(service, undone.redo_checkpoint_id)
    assert tree_hash(workspace) == after


def test_a_checkpoint_rereads_only_the_files_that_changed(service: ThreadedToolService, workspace: Path) -> None:
    seed(workspace)
    first = service.stub.CreateCheckpoint(tools_pb2.CreateCheckpointRequest(session_id="s1", label="t1"))
    assert first.files == 9 and first.files_read == 9
    (workspace / "notes.txt").write_text("changed\n")
    (workspace / "new.txt").write_text("new\n")
    second = service.stub.CreateCheckpoint(tools_pb2.CreateCheckpointRequest(session_id="s1", label="t2"))
    assert (second.files, second.files_read) == (10, 2)
    third = service.stub.CreateCheckpoint(tools_pb2.CreateCheckpointRequest(session_id="s1", label="t3"))
    assert third.files_read == 0 and third.tree == second.tree


def test_a_file_the_user_edited_since_is_kept_and_named(service: ThreadedToolService, workspace: Path) -> None:
    seed(workspace)
    checkpoint = str(bash(service, "echo agent > notes.txt && rm run.sh")["checkpoint"])
    end = service.stub.CreateCheckpoint(tools_pb2.CreateCheckpointRequest(session_id="s1", label="end of turn 1"))
    (workspace / "docs" / "a.md").write_text("the user's edit\n")

    preview = restore(service, checkpoint, baseline_checkpoint_id=end.checkpoint_id, dry_run=True)
    assert list(preview.changed_since) == ["docs/a.md"] and list(preview.kept) == ["docs/a.md"]
    assert (workspace / "notes.txt").read_text() == "agent\n"  # a dry run changes nothing

    done = restore(service, checkpoint, baseline_checkpoint_id=end.checkpoint_id)
    assert list(done.kept) == ["docs/a.md"]
    assert (workspace / "docs" / "a.md").read_text() == "the user's edit\n"
    assert (workspace / "notes.txt").read_text() == "old line\nkeep\n" and (workspace / "run.sh").exists()

    restore(service, checkpoint, baseline_checkpoint_id=end.checkpoint_id, overwrite_changed=True)
    assert (workspace / "docs" / "a.md").read_text() == "# a\n"


def test_files_over_the_cap_are_named_as_not_restorable(make_service: Callable[..., ThreadedToolService],
                                                        workspace: Path) -> None:
    svc = make_service({"checkpoints": {"max_file_mb": 1}})
    svc.open("s1", str(workspace))
    (workspace / "big.bin").write_bytes(b"x" * (1024 * 1024 + 1))
    (workspace / "small.txt").write_text("s\n")
    checkpoint = str(bash(svc, "rm big.bin small.txt")["checkpoint"])
    report = restore(svc, checkpoint)
    assert (workspace / "small.txt").exists() and not (workspace / "big.bin").exists()
    assert len(report.not_restorable) == 1 and report.not_restorable[0].startswith("big.bin: larger than")


def test_the_store_lives_outside_the_workspace_and_leaves_git_alone(service: ThreadedToolService,
                                                                   workspace: Path, isolated_home: Path) -> None:
    seed(workspace)
    (workspace / ".git" / "refs").mkdir(parents=True)
    (workspace / ".git" / "index").write_bytes(b"DIRC")
    git_before = tree_listing(workspace / ".git", ())
    checkpoint = str(bash(service, "echo x > notes.txt")["checkpoint"])
    restore(service, checkpoint)
    assert tree_listing(workspace / ".git", ()) == git_before
    assert not [p for p in workspace.rglob("*") if "checkpoint" in p.name or "restore" in p.name]
    stores = list((isolated_home / ".local" / "share" / "ai-coding" / "checkpoints").iterdir())
    assert len(stores) == 1 and (stores[0] / "refs" / f"{checkpoint}.json").exists()


def test_every_changing_tool_takes_one_and_reading_tools_none(service: ThreadedToolService, workspace: Path) -> None:
    (workspace / "f.txt").write_text("a\n")
    _, read = service.call("s1", "read", json.dumps({"path": "f.txt"}))
    assert "checkpoint" not in json.loads(read.data_json)
    _, written = service.call("s1", "write", json.dumps({"path": "g.txt", "content": "g\n"}), call_id="w1")
    listed = service.stub.ListCheckpoints(tools_pb2.ListCheckpointsRequest(session_id="s1"))
    assert [(c.call_id, c.label) for c in listed.checkpoints] == [("w1", "before write"), ("w1", "after write")]
    data = json.loads(written.data_json)
    assert [data["checkpoint"], data["checkpoint_after"]] == [c.checkpoint_id for c in listed.checkpoints]
    changes = service.stub.DiffCheckpoint(tools_pb2.DiffCheckpointRequest(
        session_id="s1", from_checkpoint_id=listed.checkpoints[0].checkpoint_id)).changes
    assert [(c.path, c.kind, c.lines_added, c.lines_removed) for c in changes] == [("g.txt", "added", 1, 0)]


def test_the_model_has_no_restore_tool(service: ThreadedToolService) -> None:
    names = [t.name for t in service.stub.ListTools(tools_pb2.ListToolsRequest(session_id="s1")).tools]
    assert not [n for n in names if "checkpoint" in n or "restore" in n]
    _, result = service.call("s1", "checkpoint_restore", json.dumps({"checkpoint_id": "cp-000001"}))
    assert result.error.code == "unknown_tool"


def test_an_unknown_checkpoint_is_not_found_with_its_reason(service: ThreadedToolService) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        restore(service, "cp-999999")
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert "cp-999999" in str(caught.value.details())


def test_pruning_a_session_drops_its_checkpoints_and_their_objects(service: ThreadedToolService,
                                                                  workspace: Path) -> None:
    seed(workspace)
    bash(service, "head -c 200000 /dev/urandom > noise.bin", call_id="c1")
    bash(service, "rm noise.bin", call_id="c2")
    listed = service.stub.ListCheckpoints(tools_pb2.ListCheckpointsRequest(session_id="s1"))
    assert len(listed.checkpoints) == 4 and listed.store_bytes > 200000  # one before and one after each
    pruned = service.stub.PruneCheckpoints(tools_pb2.PruneCheckpointsRequest(session_id="s1", keep_last=1))
    assert pruned.dropped == 3 and pruned.bytes_freed > 200000  # only the dropped ones held noise.bin
    pruned = service.stub.PruneCheckpoints(tools_pb2.PruneCheckpointsRequest(session_id="s1"))
    assert pruned.dropped == 1 and pruned.bytes_freed > 0
    after = service.stub.ListCheckpoints(tools_pb2.ListCheckpointsRequest(session_id="s1"))
    assert not after.checkpoints and after.store_bytes == 0


def test_a_workspace_over_max_files_is_not_checkpointed_and_every_changing_call_says_so(
        make_service: Callable[..., ThreadedToolService], workspace: Path) -> None:
    svc = make_service({"checkpoints": {"max_files": 5}})
    svc.open("s1", str(workspace))
    for i in range(6):
        (workspace / f"f{i}").write_text(str(i))
    for call_id in ("c1", "c2"):
        data = bash(svc, "echo more > g.txt", call_id=call_id)
        assert "checkpoint" not in data and "more than 5 files" in str(data["checkpoint_error"])
    with pytest.raises(grpc.RpcError) as caught:
        svc.stub.ListCheckpoints(tools_pb2.ListCheckpointsRequest(session_id="s1"))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "tools.checkpoints.max_files" in str(caught.value.details())


def _refs(home: Path) -> list[Path]:
    return sorted(home.glob("**/ai-coding/checkpoints/*/refs/cp-*.json"))


def test_the_checkpoints_of_a_deleted_session_go_and_an_open_ones_stay(service: ThreadedToolService,
                                                                      workspace: Path) -> None:
    seed(workspace)
    for session in ("gone", "still-open"):
        service.open(session, str(workspace))
        _, result = service.call(session, "bash", json.dumps({"command": f"echo {session} > {session}.txt"}))
        assert result.ok, result.output
    bash(service, "head -c 100000 /dev/urandom > s1.bin")
    service.stub.CloseSession(tools_pb2.CloseSessionRequest(session_id="gone"))
    service.call("s1", "bash", json.dumps({"command": "rm gone.txt"}))  # its content only "gone" had

    pruned = service.stub.PruneCheckpoints(tools_pb2.PruneCheckpointsRequest(
        session_id="s1", orphans=True, live_sessions=["s1"]))
    assert pruned.dropped == 2 and pruned.bytes_freed > 0  # "gone": before and after its step
    left = {c.session_id for c in service.stub.ListCheckpoints(tools_pb2.ListCheckpointsRequest(
        session_id="s1")).checkpoints}
    assert "gone" not in left
    for session in ("s1", "still-open"):
        assert service.stub.ListCheckpoints(tools_pb2.ListCheckpointsRequest(session_id=session)).checkpoints


def test_checkpoints_past_the_age_limit_are_dropped_when_the_next_is_taken(
        make_service: Callable[..., ThreadedToolService], workspace: Path, isolated_home: Path) -> None:
    seed(workspace)
    first = make_service({"checkpoints": {"max_age_days": 30}})
    first.open("s1", str(workspace))
    bash(first, "head -c 100000 /dev/urandom > old.bin", call_id="c1")
    bash(first, "rm old.bin", call_id="c2")
    refs = _refs(isolated_home)
    assert len(refs) == 4
    for ref in refs[:3]:  # all but the one after old.bin was removed: 40 days ago
        raw = json.loads(ref.read_text())
        raw["created"] -= 40 * 86_400
        ref.write_text(json.dumps(raw))

    second = make_service({"checkpoints": {"max_age_days": 30}})  # a restarted service (a store of its own)
    second.open("s1", str(workspace))
    bash(second, "echo new > new.txt", call_id="c3")
    assert [r.name for r in _refs(isolated_home)] == ["cp-000004.json", "cp-000005.json", "cp-000006.json"]
    listed = second.stub.ListCheckpoints(tools_pb2.ListCheckpointsRequest(session_id="s1"))
    assert listed.store_bytes < 100_000  # old.bin's content went with the only checkpoints that held it
