"""Fetch one task's repository and run it headless, leaving its result in a directory.

``fetch`` is the Job pod's init container: the repository at the task's commit in an empty
workspace. ``run_task`` is its main container: ``ai-coding run --json`` in that workspace, then
the result folder::

    result.json     index, id, repo, commit, exit status, turn status, final text, session id, diff size
    events.jsonl    the run's JSON lines (stdout), stderr.txt what it printed to stderr
    diff.patch      every change against the commit (new files included)
    session.json    the session file, traces/ the turn traces

SIGTERM (the pod is stopping) goes on to the run, which ends the turn with its final event; the
result is still written, with the run's exit status (143).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType

from clients.cli.batch.tasks import BatchError, Task

GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}


@dataclass(frozen=True)
class RunFacts:
    """What a run's JSON lines say about how it ended."""

    session_id: str
    status: str
    final_text: str


def _git(args: list[str], cwd: Path) -> str:
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise BatchError(f"git {args[0]} failed in {cwd}: {detail}")
    return proc.stdout


def fetch(task: Task, workspace: Path) -> str:
    """Check ``task.repo`` out at ``task.commit`` into the empty ``workspace``; the full commit id."""
    workspace.mkdir(parents=True, exist_ok=True)
    if any(p.name != "lost+found" for p in workspace.iterdir()):
        raise BatchError(f"workspace {workspace} is not empty; each task needs a fresh one")
    _git(["init", "-q"], workspace)
    _git(["remote", "add", "origin", task.repo], workspace)
    try:  # one commit only; servers that refuse a bare commit id get a full fetch instead
        _git(["fetch", "-q", "--depth", "1", "origin", task.commit], workspace)
    except BatchError:
        _git(["fetch", "-q", "origin"], workspace)
    _git(["-c", "advice.detachedHead=false", "checkout", "-q", "--detach", task.commit], workspace)
    return _git(["rev-parse", "HEAD"], workspace).strip()


def run_facts(lines: Iterable[str]) -> RunFacts:
    """The session id, turn status and final text of a run's JSON lines (pure)."""
    session, status, text = "", "", ""
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        session = str(event.get("sessionId") or session)
        finished = event.get("turnFinished")
        if isinstance(finished, dict):
            status = str(finished.get("status", ""))
            text = str(finished.get("text", ""))
    return RunFacts(session, status, text)


def diff_stats(patch: str) -> tuple[int, int]:
    """(files changed, changed lines) of a unified diff (pure)."""
    files = sum(1 for line in patch.splitlines() if line.startswith("diff --git "))
    changed = sum(1 for line in patch.splitlines()
                  if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")))
    return files, changed


@dataclass(frozen=True)
class ResultRecord:
    """``result.json`` of one task (camelCase on disk, like the session files)."""

    index: int
    id: str
    repo: str
    commit: str
    exitStatus: int
    status: str
    finalText: str
    sessionId: str
    filesChanged: int
    linesChanged: int
    durationS: float


def _run_command(task: Task, workspace: Path) -> list[str]:
    argv = [sys.executable, "-m", "clients.cli.entry", "run", "--json", "--auto-approve", "-w", str(workspace)]
    if task.timeout_seconds:
        argv += ["--timeout", f"{task.timeout_seconds:g}"]
    return [*argv, "--", task.prompt]


@dataclass
class _Forward:
    proc: subprocess.Popen[bytes] | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signum)


def run_task(task: Task, index: int, workspace: Path, results: Path) -> ResultRecord:
    """Run ``task`` in ``workspace`` and write its result folder ``results``."""
    results.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    forward = _Forward()
    previous = signal.signal(signal.SIGTERM, forward)
    try:
        with open(results / "events.jsonl", "wb") as out, open(results / "stderr.txt", "wb") as err:
            forward.proc = subprocess.Popen(_run_command(task, workspace), stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=err, cwd=workspace)
            code = forward.proc.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
    with open(results / "events.jsonl", encoding="utf-8", errors="replace") as fh:
        facts = run_facts(fh)
    patch = workspace_diff(workspace, task.commit)
    (results / "diff.patch").write_text(patch, encoding="utf-8")
    _copy_session(workspace, facts.session_id, results)
    files, lines = diff_stats(patch)
    record = ResultRecord(index, task.id, task.repo, task.commit, code, facts.status, facts.final_text,
                          facts.session_id, files, lines, round(time.monotonic() - started, 2))
    tmp = results / "result.json.tmp"
    tmp.write_text(json.dumps(asdict(record), indent=2) + "\n", encoding="utf-8")
    tmp.replace(results / "result.json")
    return record


def workspace_diff(workspace: Path, commit: str) -> str:
    """Every change against ``commit``, files the agent created included (not ``.ai-coding/``)."""
    _git(["add", "--all", "--intent-to-add", "--", "."], workspace)
    return _git(["diff", "--binary", commit, "--", "."], workspace)


def _copy_session(workspace: Path, session_id: str, results: Path) -> None:
    if not session_id:
        return
    state = workspace / ".ai-coding"
    session = state / "sessions" / f"{session_id}.json"
    if session.is_file():
        shutil.copyfile(session, results / "session.json")
    traces = state / "traces" / session_id
    if traces.is_dir():
        shutil.copytree(traces, results / "traces", dirs_exist_ok=True)
