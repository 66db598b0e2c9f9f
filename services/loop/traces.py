"""Turn traces: ``<workspace>/.ai-coding/traces/<session>/turn-<n>.jsonl`` + ``summary.json``.

One line per event, metadata plus previews of at most 500 characters, with
anything shaped like a secret redacted before it is written. Streamed deltas
and tool chunks are counted, not copied (the session file has the text).
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import IO, Any

from services.kernel.statedir import STATE_DIR, ensure_state_dir
from services.loop.events import Event

PREVIEW_CHARS = 500
_COUNTED = frozenset({"text_delta", "reasoning_delta", "tool_chunk"})
_SECRET = re.compile(
    r"(sk-[A-Za-z0-9_-]{12,}|Bearer\s+[A-Za-z0-9._~+/=-]{12,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|AKIA[0-9A-Z]{16}|(?i:(?:api[_-]?key|token|secret|password)\s*[=:]\s*)\S{6,})"
)


def redact(text: str) -> str:
    """``text`` with secret-shaped substrings replaced by ``[redacted]``."""
    return _SECRET.sub("[redacted]", text)


def preview(value: Any) -> Any:
    """A JSON-able, redacted, length-capped copy of an event field."""
    if isinstance(value, str):
        text = redact(value)
        return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + f"...[{len(text)} chars]"
    if isinstance(value, dict):
        return {k: preview(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [preview(v) for v in value[:50]]
    if is_dataclass(value) and not isinstance(value, type):  # field by field: asdict deep-copies first
        return {f.name: preview(getattr(value, f.name)) for f in fields(value)}
    return value


class TraceWriter:
    """Writes one session's turn traces (best effort: a full disk never fails a turn)."""

    def __init__(self, workspace: str, session_id: str) -> None:
        self.workspace = workspace
        self.dir = Path(workspace) / STATE_DIR / "traces" / session_id
        self._fh: IO[str] | None = None
        self._counts: dict[str, int] = {}
        self._turn = 0
        self._summary: dict[str, Any] = {"session": session_id, "turns": []}

    def start_turn(self, number: int) -> None:
        self.end_turn()
        self._turn, self._counts = number, {}
        try:
            ensure_state_dir(self.workspace)
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._fh = open(self.dir / f"turn-{number}.jsonl", "a", encoding="utf-8")  # noqa: SIM115
        except OSError:
            self._fh = None

    def record(self, event: Event) -> None:
        if self._fh is None:
            return
        if event.kind in _COUNTED:
            self._counts[event.kind] = self._counts.get(event.kind, 0) + 1
            return
        line = {"seq": event.seq, "ts": event.ts, "turn": event.turn, "kind": event.kind, **preview(event.data)}
        if event.kind == "turn_finished":
            line["counts"] = dict(self._counts)
            self._summary["turns"].append({"turn": event.turn, "status": event.data.get("status"),
                                           "iterations": event.data.get("iterations"),
                                           "duration_ms": event.data.get("duration_ms"),
                                           "usage": preview(event.data.get("usage"))})
        try:
            self._fh.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
            if event.kind in ("model_step_finished", "tool_finished", "turn_finished"):
                self._fh.flush()
        except OSError:
            pass

    def end_turn(self) -> None:
        if self._fh is None:
            return
        with contextlib.suppress(OSError):
            self._fh.close()
            (self.dir / "summary.json").write_text(json.dumps(self._summary, indent=1, default=str))
        self._fh = None
