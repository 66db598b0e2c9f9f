"""``<workspace>/.ai-coding/transcripts/``: where compacted-away text goes, so nothing is lost.

- ``persisted/<sha256>.txt``: L3, a large result of the trailing tool batch;
- ``elided/<sha256>.txt``: L2, the body behind an envelope (content-addressed: written once);
- ``archive/<session>.jsonl``: every message L1, L4 or the fallback took out of the view, one
  JSON line each (``index``, ``role``, ``text``), appended before the state that hides it is saved.

``search`` answers ``history_search`` over the archive (and the bodies it points to).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.kernel.statedir import ensure_state_dir

Message = dict[str, Any]
TRANSCRIPTS = "transcripts"
_WORD = re.compile(r"[A-Za-z0-9_]+")


def message_text(message: Message) -> str:
    """What a message says, tool calls included, as archived and searched."""
    text = str(message.get("content") or "")
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        text += f"\n[tool call {function.get('name', '')}] {function.get('arguments', '')}"
    return text


@dataclass(frozen=True)
class Found:
    """One history_search hit."""

    index: int
    role: str
    text: str
    score: float


class Transcripts:
    """The transcripts folder of one workspace."""

    def __init__(self, workspace: str | Path) -> None:
        self.workspace = Path(workspace)
        self.root = self.workspace / ".ai-coding" / TRANSCRIPTS
        self._archived: dict[str, set[int]] = {}

    def _dir(self, name: str) -> Path:
        ensure_state_dir(self.workspace)
        path = self.root / name
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path

    def relative(self, path: Path) -> str:
        """A path as the model is shown it (relative to the workspace)."""
        return str(path.relative_to(self.workspace))

    def _content_file(self, folder: str, body: str) -> Path:
        data = body.encode("utf-8", "surrogatepass")
        path = self._dir(folder) / f"{hashlib.sha256(data).hexdigest()}.txt"
        if not path.exists():  # content-addressed: the same body is written once
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        return path

    def persist(self, body: str) -> str:
        """L3: keep a large trailing result; returns its workspace-relative path."""
        return self.relative(self._content_file("persisted", body))

    def elide(self, body: str) -> str:
        """L2: keep the body behind an envelope; returns its workspace-relative path."""
        return self.relative(self._content_file("elided", body))

    def archive_path(self, session_id: str) -> Path:
        return self.root / "archive" / f"{session_id}.jsonl"

    def archived(self, session_id: str) -> set[int]:
        """Indices already in the session's archive."""
        known = self._archived.get(session_id)
        if known is None:
            known = {record["index"] for record in self._records(session_id)}
            self._archived[session_id] = known
        return known

    def archive(self, session_id: str, messages: list[Message], indices: range | list[int]) -> int:
        """Append the messages at ``indices`` not archived yet (flushed before returning); returns how many."""
        known = self.archived(session_id)
        lines = [json.dumps({"index": i, "role": messages[i].get("role", ""), "text": message_text(messages[i])},
                            ensure_ascii=False) + "\n" for i in indices if i not in known]
        if not lines:
            return 0
        self._dir("archive")
        with open(self.archive_path(session_id), "a", encoding="utf-8") as fh:
            fh.write("".join(lines))
            fh.flush()
            os.fsync(fh.fileno())
        known.update(i for i in indices)
        return len(lines)

    def _records(self, session_id: str) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        with contextlib.suppress(OSError), open(self.archive_path(session_id), encoding="utf-8") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                except ValueError:  # a torn last line after a kill: the message is archived again later
                    continue
                if isinstance(record, dict) and isinstance(record.get("index"), int):
                    records.append(record)
        return records

    def search(self, session_id: str, query: str, k: int = 5) -> list[Found]:
        """Archived messages of the session ranked by how many query words they contain (then how often),
        newest first on ties; a hit's text is the whole archived message."""
        words = {w.lower() for w in _WORD.findall(query)}
        if not words:
            return []
        best: dict[int, Found] = {}
        for record in self._records(session_id):
            text = str(record.get("text", ""))
            lower = text.lower()
            present = [w for w in words if w in lower]
            if not present:
                continue
            score = len(present) + min(sum(lower.count(w) for w in present), 50) / 100
            best[record["index"]] = Found(record["index"], str(record.get("role", "")), text, score)
        ranked = sorted(best.values(), key=lambda f: (-f.score, -f.index))
        return ranked[:k]
