"""The runs table: 200 rows, finished ones pruned first, /tasks text and its refusals, lost runs."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from services.loop.subagents.manager import SubagentLimits, SubagentManager
from services.loop.subagents.packet import PacketStatus
from services.loop.subagents.records import RUNNING_DIR
from services.loop.subagents.runs import MAX_ROWS, RunRecord, RunsTable


def manager(workspace: Path, session_id: str = "s1") -> RunsTable:
    def no_parent() -> Any:
        raise AssertionError("no child runs in these tests")

    return SubagentManager(session_id, str(workspace), no_parent, lambda body, scope: None,
                           lambda: SubagentLimits(60, 5, 0, 4)).table


def test_the_table_keeps_200_rows_pruning_the_oldest_finished_ones_and_never_a_running_one(tmp_path: Path) -> None:
    subagents = manager(tmp_path)
    running = RunRecord("run-live", "live", "keeps running", True, "c0")
    subagents.add(running)
    for i in range(MAX_ROWS + 5):
        row = RunRecord(f"run-{i}", f"n{i}", "t", True, f"c{i}")
        row.status = PacketStatus.COMPLETED
        subagents.add(row)
    assert len(subagents.runs) == MAX_ROWS
    assert "run-live" in subagents.runs and "run-0" not in subagents.runs and f"run-{MAX_ROWS + 4}" in subagents.runs
    assert subagents.running()


def test_tasks_lists_rows_and_stop_refuses_unknown_finished_and_malformed_requests(tmp_path: Path) -> None:
    subagents = manager(tmp_path)
    assert subagents.command("")[0] == "no subagent runs in this session"
    done = RunRecord("sa-abc123", "lister", "list files", True, "c1")
    done.status, done.tokens = PacketStatus.COMPLETED, 1234
    subagents.add(done)
    text, data = subagents.command("")
    assert "sa-abc123" in text and "lister" in text and "completed" in text and "1234 tok" in text
    assert json.loads(data)["runs"][0]["tokens"] == 1234
    assert json.loads(subagents.command("stop sa-abc")[1]) == {"error": "finished"}
    assert json.loads(subagents.command("stop nope")[1]) == {"error": "unknown_run"}
    assert json.loads(subagents.command("stop")[1]) == {"error": "usage"}
    assert json.loads(subagents.command("kill sa-abc")[1]) == {"error": "usage"}


def test_a_marker_left_by_a_dead_loop_lists_the_run_as_lost_and_another_sessions_marker_is_left_alone(
        tmp_path: Path) -> None:
    folder = tmp_path / RUNNING_DIR
    folder.mkdir(parents=True)
    dead = {"run_id": "sa-dead", "session_id": "s1", "name": "survey", "pid": 2**22 + 7, "started": 1.0}
    (folder / "sa-dead.json").write_text(json.dumps(dead))
    other = {**dead, "run_id": "sa-other", "session_id": "s2"}
    (folder / "sa-other.json").write_text(json.dumps(other))
    ours = {**dead, "run_id": "sa-ours", "pid": os.getpid()}
    (folder / "sa-ours.json").write_text(json.dumps(ours))
    (folder / "broken.json").write_text("{not json")
    text, data = manager(tmp_path).command("")
    assert "sa-dead" in text and "lost: the loop restarted while it ran (runs are not resumed)" in text
    assert [row["run_id"] for row in json.loads(data)["lost"]] == ["sa-dead"]
    # Said again by a second runtime of the same session (the marker was kept, as lost).
    assert "sa-dead" in manager(tmp_path).command("")[0]
    assert sorted(p.name for p in folder.glob("*.json")) == ["broken.json", "sa-other.json", "sa-ours.json"]


def test_a_rewind_stops_and_forgets_the_children_the_dropped_turns_started(tmp_path: Path) -> None:
    async def run() -> None:
        subagents = manager(tmp_path)
        earlier = RunRecord("sa-early", "early", "kept", True, "c1", started=100.0)
        earlier.status = PacketStatus.COMPLETED
        later = RunRecord("sa-late", "late", "started in a dropped turn", True, "c2", started=200.0)
        handle: asyncio.Task[Any] = asyncio.ensure_future(asyncio.sleep(60))
        later.task_handle = handle
        subagents.add(earlier)
        subagents.add(later)
        assert subagents.forget_since(150.0) == 1
        await asyncio.sleep(0)
        assert list(subagents.runs) == ["sa-early"] and handle.cancelled() and not subagents.running()

    asyncio.run(run())
