"""A run's files under the workspace's state dir: its transcript, and the marker of a background
run that says, after a loop died, that the run was lost (runs are never resumed)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from services.kernel.statedir import ensure_state_dir
from services.loop.subagents.packet import SubagentPacket, read_json_object
from services.loop.subagents.runs import MAX_ROWS, RunRecord

log = logging.getLogger("ai_coding.loop")

TRANSCRIPTS_DIR = Path(".ai-coding") / "transcripts" / "subagents"
RUNNING_DIR = TRANSCRIPTS_DIR / "running"


def write_transcript(workspace: str, session_id: str, run: RunRecord, messages: list[dict[str, Any]],
                     packet: SubagentPacket) -> str:
    """The child's transcript, as a path relative to the workspace ("" when it could not be written)."""
    relative = TRANSCRIPTS_DIR / f"{run.run_id}.json"
    doc = {"run_id": run.run_id, "session_id": session_id, "name": run.name, "task": run.task,
           "background": run.background, "packet": packet.to_json(),
           "messages": [{k: v for k, v in m.items() if not k.startswith("_")} for m in messages]}
    try:
        ensure_state_dir(workspace)
        path = Path(workspace) / relative
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, ensure_ascii=False, default=str), encoding="utf-8")
    except OSError as err:
        log.error("writing the transcript of subagent %s failed: %s", run.run_id, err)
        return ""
    return str(relative)


def mark_running(workspace: str, session_id: str, run: RunRecord) -> None:
    """The marker of a background run, removed when it ends."""
    try:
        ensure_state_dir(workspace)
        folder = Path(workspace) / RUNNING_DIR
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        (folder / f"{run.run_id}.json").write_text(json.dumps(
            {"run_id": run.run_id, "session_id": session_id, "name": run.name, "pid": os.getpid(),
             "started": run.started}), encoding="utf-8")
    except OSError as err:
        log.error("marking subagent %s as running failed: %s", run.run_id, err)


def clear_marker(workspace: str, run_id: str) -> None:
    with contextlib.suppress(OSError):
        (Path(workspace) / RUNNING_DIR / f"{run_id}.json").unlink()


def collect_lost(workspace: str, session_id: str) -> list[dict[str, Any]]:
    """Background runs of this session that a dead loop left running: lost, never resumed.

    A marker whose loop is gone moves to ``lost/`` (kept, so every later look says so too, also
    from a second runtime of the same session); the newest ``MAX_ROWS`` are listed."""
    folder = Path(workspace) / RUNNING_DIR
    lost_dir = folder / "lost"
    if not folder.is_dir():
        return []
    for marker in sorted(folder.glob("*.json")):
        doc = read_json_object(marker)
        if doc is None or doc.get("session_id") != session_id or doc.get("pid") == os.getpid():
            continue  # another session's, or ours: still running in this loop
        with contextlib.suppress(OSError):
            lost_dir.mkdir(mode=0o700, exist_ok=True)
            os.replace(marker, lost_dir / marker.name)
    lost: list[dict[str, Any]] = []
    for marker in sorted(lost_dir.glob("*.json")) if lost_dir.is_dir() else []:
        doc = read_json_object(marker)
        if doc is not None and doc.get("session_id") == session_id:
            lost.append({"run_id": str(doc.get("run_id", marker.stem)), "name": str(doc.get("name", "")),
                         "status": "lost", "started": doc.get("started", 0)})
    lost.sort(key=lambda row: float(row["started"] or 0))
    return lost[-MAX_ROWS:]
