"""Turn traces: ``<workspace>/.ai-coding/traces/<session>/turn-<n>.jsonl`` + ``summary.json``.

One line per event, metadata plus previews of at most 500 characters, with
anything shaped like a secret redacted before it is written. Streamed deltas
and tool chunks are counted, not copied (the session file has the text).

A turn's file is opened by its ``turn_started`` event and closed by its
``turn_finished`` event, so a turn that ran straight after another (queued
input) gets its own complete file. ``summary.json`` keeps one entry per
finished turn, across restarts of the loop (it is read back, never reset).
Readers and exports: services/loop/tracing/.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from enum import Enum
from pathlib import Path
from typing import IO, Any, Protocol, assert_never

from services.kernel.egress_records import records_from
from services.kernel.statedir import STATE_DIR, ensure_state_dir
from services.loop.core.events import Event
from services.loop.core.turn_events import (
    AcceptanceChecked,
    ApprovalRequested,
    ApprovalResolved,
    BufferRequested,
    CompactionEnded,
    CompactionStarted,
    ContextAssembled,
    Degraded,
    EventBody,
    EventsSkipped,
    HookRun,
    InputQueued,
    LedgerUpdated,
    MemoryRecalled,
    ModelStepFinished,
    Notice,
    PlanReport,
    PlanStepReceipt,
    PlanStepStarted,
    QuestionAsked,
    QuestionResolved,
    ReasoningDelta,
    SearchStalled,
    SkillCatalogChanged,
    SubagentFinished,
    SubagentStarted,
    SubagentTaskDone,
    TaskListUpdated,
    TextDelta,
    ToolChunk,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from services.loop.policy.codes import REFUSAL_CODES

PREVIEW_CHARS = 500


class TraceRole(Enum):
    """What the trace file does with an event."""

    OPEN = "open"
    """Opens the turn's file (and is its first line)."""
    COUNT = "count"
    """Counted, not copied (streamed deltas and chunks: the session file has the text)."""
    LINE = "line"
    """One line."""
    FLUSH = "flush"
    """One line, flushed at once (a step or a tool call ended)."""
    CLOSE = "close"
    """The turn's last line; closes the file and adds the turn to the summary."""


def trace_role(body: EventBody) -> TraceRole:
    """Each event kind's place in a trace (every kind named: a new one fails mypy here)."""
    match body:
        case TurnStarted():
            return TraceRole.OPEN
        case TextDelta() | ReasoningDelta() | ToolChunk():
            return TraceRole.COUNT
        case ModelStepFinished() | ToolFinished():
            return TraceRole.FLUSH
        case TurnFinished():
            return TraceRole.CLOSE
        case (ToolStarted() | ApprovalRequested() | ApprovalResolved() | QuestionAsked() | QuestionResolved() | BufferRequested()
              | TaskListUpdated() | CompactionStarted() | CompactionEnded() | MemoryRecalled() | Degraded()
              | SearchStalled() | ContextAssembled() | InputQueued() | Notice() | EventsSkipped() | HookRun()
              | SkillCatalogChanged() | AcceptanceChecked() | PlanStepStarted() | PlanStepReceipt() | PlanReport()
              | LedgerUpdated() | SubagentStarted() | SubagentFinished() | SubagentTaskDone()):
            return TraceRole.LINE
        case _:
            assert_never(body)
_SECRET = re.compile(
    r"(sk-[A-Za-z0-9_-]{12,}|Bearer\s+[A-Za-z0-9._~+/=-]{12,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|AKIA[0-9A-Z]{16}|(?i:(?:api[_-]?key|token|secret|password)\s*[=:]\s*)\S{6,})"
)
_SECRET_MARGIN = 512


def redact(text: str) -> str:
    """``text`` with secret-shaped substrings replaced by ``[redacted]``."""
    return _SECRET.sub("[redacted]", text)


def preview(value: Any) -> Any:
    """A JSON-able, redacted, length-capped copy of an event field."""
    if isinstance(value, str):
        # Cut before redacting (a 10 MB argument took ~0.2 s of the event loop); the margin keeps a
        # secret that straddles the cut matched (its tail past the margin is cut off anyway).
        text = redact(value[:PREVIEW_CHARS + _SECRET_MARGIN])
        return text if len(value) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + f"...[{len(value)} chars]"
    if isinstance(value, dict):
        return {k: preview(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [preview(v) for v in value[:50]]
    if is_dataclass(value) and not isinstance(value, type):  # field by field: asdict deep-copies first
        return {f.name: preview(getattr(value, f.name)) for f in fields(value)}
    return value


class SpanExport(Protocol):
    """Where finished turns go live (services/loop/tracing/live.py implements it)."""

    def turn_done(self, session_id: str, turn: int, lines: list[dict[str, Any]]) -> None:
        """Take a finished turn's trace lines; must return at once and never raise."""
        ...

    def turn_started(self, session_id: str) -> None:
        """A turn of the session began (an outage not yet told is told inside it); returns at once."""
        ...

    def watch(self, session_id: str, report: Callable[[str], None]) -> None:
        """Call ``report(reason)`` (on the caller's event loop) when this session's spans fail to go out."""
        ...

    def unwatch(self, session_id: str) -> None:
        """Stop telling ``session_id`` of failed exports (it closed)."""
        ...

    def shutdown(self) -> None: ...


class TraceWriter:
    """Writes one session's turn traces (best effort: a full disk never fails a turn)."""

    def __init__(self, workspace: str, session_id: str,
                 on_turn: Callable[[str, int, list[dict[str, Any]]], None] | None = None,
                 on_turn_start: Callable[[str], None] | None = None) -> None:
        """``on_turn(session, turn, lines)`` gets each finished turn's lines and ``on_turn_start(session)``
        each turn's start (the live exporter)."""
        self.workspace = workspace
        self._on_turn = on_turn
        self._on_turn_start = on_turn_start
        self._lines: list[dict[str, Any]] = []
        self.dir = Path(workspace) / STATE_DIR / "traces" / session_id
        self._fh: IO[str] | None = None
        self._counts: dict[str, int] = {}
        self._turn = 0
        self._facts: dict[str, Any] = {}
        self._summary: dict[str, Any] | None = None
        self._summary_due = False
        self.session_id = session_id

    def start_turn(self, number: int) -> None:
        """Open turn ``number``'s file (its ``turn_started`` event does the same)."""
        if self._fh is not None and self._turn == number:
            return
        self._close()
        self._write_summary()  # a queued turn starting before the last one's end_turn ran
        self._turn, self._counts, self._lines = number, {}, []
        self._facts = {"tool_calls": 0, "tool_failures": 0, "refusals": 0, "degraded": 0, "compactions": 0,
                       "egress_requests": 0, "egress_refused": 0, "egress_bytes": 0}
        try:
            ensure_state_dir(self.workspace)
            for directory in (self.dir.parent, self.dir):  # traces/ and traces/<session>/: private, as the rest
                directory.mkdir(mode=0o700, exist_ok=True)
                os.chmod(directory, 0o700)
            fd = os.open(self.dir / f"turn-{number}.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                         0o600)
            self._fh = open(fd, "a", encoding="utf-8")  # noqa: SIM115
        except OSError:
            self._fh = None

    def record(self, event: Event) -> None:
        """Write one event of the session (an event listener)."""
        role = trace_role(event.body)
        if role is TraceRole.OPEN:
            self.start_turn(event.turn)
            self._facts.update(started=event.ts, model=event.data.get("model", ""))
            if self._on_turn_start is not None and event.scope is None:
                self._on_turn_start(self.session_id)
        # A background child's event after its parent's turn ended: written to that turn's file.
        late = self._fh is None and event.scope is not None
        if self._fh is None and self._on_turn is None and not late:
            return
        if role is TraceRole.COUNT:
            self._counts[event.kind] = self._counts.get(event.kind, 0) + 1
            return
        line = {"seq": event.seq, "ts": event.ts, "turn": event.turn, "kind": event.kind, **preview(event.data)}
        if event.scope is not None:  # a subagent child's event: readers nest it under the calling tool
            line["scope"], line["parent_call_id"] = event.scope.run_id, event.scope.call_id
        self._note(event.body)
        if role is TraceRole.CLOSE:
            line["counts"] = dict(self._counts)
        if self._on_turn is not None and not late:
            self._lines.append(line)
        if late:
            self._append_late(line)
        elif self._fh is not None:
            try:
                self._fh.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
                if role is TraceRole.FLUSH:
                    self._fh.flush()
            except OSError:
                pass
        if role is TraceRole.CLOSE:
            self._finish(line)
            if self._on_turn is not None:
                lines, self._lines = self._lines, []
                self._on_turn(self.session_id, event.turn, lines)

    def _append_late(self, line: dict[str, Any]) -> None:
        """Add a line to its turn's file after that turn closed (best effort, like every write here)."""
        with contextlib.suppress(OSError):
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            with open(self.dir / f"turn-{line['turn']}.jsonl", "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")

    def _note(self, body: EventBody) -> None:
        """Count what the turn's summary entry reports."""
        if isinstance(body, ToolFinished):
            self._facts["tool_calls"] += 1
            if not body.result.ok:
                refused = body.result.error_code in REFUSAL_CODES
                self._facts["refusals" if refused else "tool_failures"] += 1
            for fact in records_from(body.result.data):  # a sandboxed command's requests (egress proxy)
                self._facts["egress_requests"] += fact.count
                self._facts["egress_refused"] += 0 if fact.allowed else fact.count
                self._facts["egress_bytes"] += fact.bytes_up + fact.bytes_down
        elif isinstance(body, Degraded):
            self._facts["degraded"] += 1
        elif isinstance(body, CompactionEnded):
            self._facts["compactions"] += 1

    def _finish(self, line: dict[str, Any]) -> None:
        entry = {"turn": line["turn"], "status": line.get("status"), "iterations": line.get("iterations"),
                 "duration_ms": line.get("duration_ms"), "usage": line.get("usage"), "ended": line["ts"],
                 **self._facts}
        summary = self._load_summary()
        summary["turns"] = [t for t in summary["turns"] if t.get("turn") != entry["turn"]] + [entry]
        self._close()
        self._summary_due = True  # written by end_turn, once the clients have the turn_finished event

    def _write_summary(self) -> None:
        if not self._summary_due or self._summary is None:
            return
        self._summary_due = False
        with contextlib.suppress(OSError):
            tmp = self.dir / "summary.json.tmp"
            # No indent: json's C encoder only runs without one (10x faster on a long session's summary).
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600), "w",
                      encoding="utf-8") as out:
                out.write(json.dumps(self._summary, default=str))
            tmp.replace(self.dir / "summary.json")

    def _load_summary(self) -> dict[str, Any]:
        """The summary as on disk the first time (a loop restarted mid-session keeps the earlier
        turns); unreadable: started afresh (the turn files still hold everything)."""
        if self._summary is None:
            try:
                loaded = json.loads((self.dir / "summary.json").read_text(encoding="utf-8"))
                turns = loaded.get("turns") if isinstance(loaded, dict) else None
                self._summary = {"session": self.session_id,
                                 "turns": [t for t in turns if isinstance(t, dict)] if isinstance(turns, list) else []}
            except (OSError, ValueError):
                self._summary = {"session": self.session_id, "turns": []}
        return self._summary

    def end_turn(self) -> None:
        """Make what the open turn wrote so far durable (its ``turn_finished`` closes it), and
        rewrite ``summary.json`` when a turn finished since the last call."""
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.flush()
        self._write_summary()

    def rewind(self, turn: int, stamp: int) -> None:
        """The conversation went back to the end of ``turn``: later turns' files are set aside as
        ``rewound-<stamp>-turn-<n>.jsonl`` (kept, not listed) and leave the summary, so a turn that
        takes one of their numbers again gets a file of its own."""
        self._close()
        with contextlib.suppress(OSError):
            for path in self.dir.glob("turn-*.jsonl"):
                number = path.stem.removeprefix("turn-")
                if number.isdigit() and int(number) > turn:
                    path.rename(path.with_name(f"rewound-{stamp}-{path.name}"))
        summary = self._load_summary()
        summary["turns"] = [t for t in summary["turns"] if not isinstance(t.get("turn"), int) or t["turn"] <= turn]
        self._summary_due = True
        self._write_summary()

    def _close(self) -> None:
        if self._fh is None:
            return
        with contextlib.suppress(OSError):
            self._fh.close()
        self._fh = None
