"""The tasks file of a batch: a YAML list of ``{id, repo, commit, prompt}`` (plus ``timeout``).

Pure: parsing and picking one task by its index; a bad file is one :class:`BatchError` line that
names the entry and the key.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_COMMIT = re.compile(r"^[0-9a-fA-F]{7,64}$")


class BatchError(Exception):
    """A batch input or result the command cannot use; the message says what to fix."""


@dataclass(frozen=True)
class Task:
    """One task: run ``prompt`` in a fresh checkout of ``repo`` at ``commit``."""

    id: str
    """Names the task in results and the summary (letters, digits, ``.``, ``_``, ``-``)."""
    repo: str
    """What ``git fetch`` takes: an https URL, or a path on a volume the pod mounts."""
    commit: str
    """The full or abbreviated commit id to check out (a branch name would move under the batch)."""
    prompt: str
    """What the agent is asked to do."""
    timeout_seconds: float = 0.0
    """``ai-coding run --timeout``: 0 leaves the loop's own turn limit."""


def parse_tasks(raw: object, source: str) -> list[Task]:
    """The tasks of a parsed tasks file, or a :class:`BatchError` naming the bad entry."""
    if not isinstance(raw, list) or not raw:
        raise BatchError(f"{source}: expected a non-empty YAML list of tasks ({{id, repo, commit, prompt}})")
    tasks: list[Task] = []
    for n, entry in enumerate(raw):
        where = f"{source}: task {n}"
        if not isinstance(entry, dict):
            raise BatchError(f"{where} is not a mapping; write id, repo, commit and prompt keys")
        unknown = sorted(set(entry) - {"id", "repo", "commit", "prompt", "timeout"})
        if unknown:
            raise BatchError(f"{where} has unknown key(s) {', '.join(map(str, unknown))}; "
                             "use id, repo, commit, prompt, timeout")
        values = {key: str(entry.get(key, "") or "").strip() for key in ("id", "repo", "commit", "prompt")}
        for key, value in values.items():
            if not value:
                raise BatchError(f"{where} has no {key}")
        if not _ID.match(values["id"]):
            raise BatchError(f"{where}: id {values['id']!r} may hold only letters, digits, '.', '_' and '-'")
        if not _COMMIT.match(values["commit"]):
            raise BatchError(f"{where}: commit {values['commit']!r} is not a commit id; "
                             "pin the task to a commit (hex), not a branch")
        timeout = entry.get("timeout", 0) or 0
        if not isinstance(timeout, int | float) or timeout < 0:
            raise BatchError(f"{where}: timeout {timeout!r} is not a number of seconds >= 0")
        tasks.append(Task(values["id"], values["repo"], values["commit"], values["prompt"], float(timeout)))
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise BatchError(f"{source}: two tasks have the id {task.id!r}; ids name result folders, make them unique")
        seen.add(task.id)
    return tasks


def load_tasks(path: Path) -> list[Task]:
    """Read and parse the tasks file at ``path``."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BatchError(f"cannot read the tasks file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise BatchError(f"{path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    return parse_tasks(raw, str(path))


def task_at(tasks: Sequence[Task], index: int) -> Task:
    """The task of completion index ``index`` (the Job's ``completions`` must equal the task count)."""
    if not 0 <= index < len(tasks):
        raise BatchError(f"task index {index} is outside the tasks file's {len(tasks)} task(s); "
                         f"set the Job's completions to {len(tasks)}")
    return tasks[index]
