"""Read a batch's result folders back and summarise them (pure apart from reading files).

A results directory holds one folder per task (``task-<index>/`` from the Job, whatever name a
``kubectl cp`` gave it); a folder without ``result.json`` is a task that never finished.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clients.cli.batch.tasks import BatchError


@dataclass(frozen=True)
class TaskResult:
    """One row of the summary."""

    folder: str
    index: int
    id: str
    exit_status: int | None
    """None: the task left no result.json (still running, or its pod died before writing it)."""
    status: str
    final_text: str
    files_changed: int
    lines_changed: int
    session_id: str


def _short_status(status: str) -> str:
    return status.removeprefix("TURN_STATUS_").lower() or "-"


def read_result(folder: Path) -> TaskResult:
    """The row of one task folder."""
    path = folder / "result.json"
    if not path.is_file():
        return TaskResult(folder.name, -1, folder.name, None, "no result", "", 0, 0, "")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return TaskResult(folder.name, int(raw["index"]), str(raw["id"]), int(raw["exitStatus"]),
                          _short_status(str(raw.get("status", ""))), str(raw.get("finalText", "")),
                          int(raw.get("filesChanged", 0)), int(raw.get("linesChanged", 0)),
                          str(raw.get("sessionId", "")))
    except (ValueError, KeyError, TypeError) as exc:
        return TaskResult(folder.name, -1, folder.name, None, f"unreadable result.json ({exc})", "", 0, 0, "")


def read_results(directory: Path) -> list[TaskResult]:
    """Every task folder under ``directory``, ordered by task index then name."""
    if not directory.is_dir():
        raise BatchError(f"{directory} is not a directory; pass the folder the results were copied to")
    folders = [p for p in sorted(directory.iterdir()) if p.is_dir()]
    if (directory / "result.json").is_file():  # one task's folder itself
        folders = [directory]
    rows = [read_result(f) for f in folders]
    if not rows:
        raise BatchError(f"{directory} holds no task folders; copy the results volume there first")
    return sorted(rows, key=lambda r: (r.index < 0, r.index, r.folder))


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def summary_lines(rows: Sequence[TaskResult], text_width: int = 60) -> list[str]:
    """The table ``ai-coding batch collect`` prints, then one totals line."""
    width = max(4, *(len(r.id) for r in rows))
    lines = [f"{'#':>3}  {'task':<{width}}  {'exit':>4}  {'status':<15} {'files':>5} {'lines':>6}  final text"]
    for r in rows:
        index = str(r.index) if r.index >= 0 else "?"
        code = "-" if r.exit_status is None else str(r.exit_status)
        lines.append(f"{index:>3}  {r.id:<{width}}  {code:>4}  {r.status:<15} {r.files_changed:>5} "
                     f"{r.lines_changed:>6}  {_one_line(r.final_text, text_width)}")
    counts = Counter("ok" if r.exit_status == 0 else "missing" if r.exit_status is None else "failed" for r in rows)
    lines.append(f"{len(rows)} task(s): {counts['ok']} completed, {counts['failed']} not completed, "
                 f"{counts['missing']} without a result")
    return lines


def summary_json(rows: Sequence[TaskResult]) -> list[dict[str, object]]:
    """The rows as JSON objects (``collect --json``)."""
    return [{"folder": r.folder, "index": r.index, "id": r.id, "exitStatus": r.exit_status, "status": r.status,
             "finalText": r.final_text, "filesChanged": r.files_changed, "linesChanged": r.lines_changed,
             "sessionId": r.session_id} for r in rows]
