"""``<workspace>/.ai-coding/transcripts/``: where compacted-away text goes, so nothing is lost.

- ``persisted/<sha256>.txt``: L3, a large result of the trailing tool batch;
- ``elided/<sha256>.txt``: L2, the body behind an envelope (content-addressed: written once);
- ``archive/<session>.txt``: every message L1, L4 or the fallback took out of the view, appended
  before the state that hides it is saved: per message a header line ``<index> <role> <chars>``
  then exactly that many characters and a newline (no escaping: archiving 10k messages is one
  write, not 10k JSON encodings). A torn last record (a kill mid-write) is ignored and written
  again by the next compaction that hides it.

``search`` answers ``history_search`` over the archive (and the bodies it points to).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.kernel.statedir import ensure_state_dir
from services.loop.core.ports import ArchivedRecord

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
        self._written: set[Path] = set()
        self._dirs: set[str] = set()
        # Bodies already written, by the body itself: the strings are the record's own (no copy),
        # and a str caches its hash, so a later compaction finds each in O(1).
        self._bodies: dict[tuple[str, str], Path] = {}
        self.unsent: dict[str, list[ArchivedRecord]] = {}
        """Archived records the memory service has not indexed yet, per session (the keeper sends them)."""

    def _dir(self, name: str) -> Path:
        ensure_state_dir(self.workspace)
        path = self.root / name
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path

    def relative(self, path: Path) -> str:
        """A path as the model is shown it (relative to the workspace)."""
        return str(path.relative_to(self.workspace))

    def _content_file(self, folder: str, body: str) -> Path:
        known = self._bodies.get((folder, body))  # a body seen before: no hashing, no file system
        if known is not None:
            return known
        path = self._write_content(folder, body)
        self._bodies[(folder, body)] = path
        return path

    def _write_content(self, folder: str, body: str) -> Path:
        data = body.encode("utf-8", "surrogatepass")
        path = self.root / folder / f"{hashlib.sha256(data).hexdigest()}.txt"
        if path in self._written:
            return path
        directory = self._dir(folder) if folder not in self._dirs else path.parent
        self._dirs.add(folder)
        try:  # content-addressed: the same body is written once
            fd = os.open(directory / path.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if path.stat().st_size == len(data):
                self._written.add(path)
                return path
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC)  # torn by a kill mid-write: write it again
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        self._written.add(path)
        return path

    def persist(self, body: str) -> str:
        """L3: keep a large trailing result; returns its workspace-relative path."""
        return self.relative(self._content_file("persisted", body))

    def elide(self, body: str) -> str:
        """L2: keep the body behind an envelope; returns its workspace-relative path."""
        return self.relative(self._content_file("elided", body))

    def archive_path(self, session_id: str) -> Path:
        return self.root / "archive" / f"{session_id}.txt"

    def archived(self, session_id: str) -> set[int]:
        """Indices already in the session's archive."""
        known = self._archived.get(session_id)
        if known is None:
            known = {record["index"] for record in self.records(session_id)}
            self._archived[session_id] = known
        return known

    def archive(self, session_id: str, messages: list[Message], indices: range | list[int]) -> int:
        """Append the messages at ``indices`` not archived yet (in the kernel before returning, so a
        kill -9 keeps them; as durable as the session file); returns how many."""
        known = self.archived(session_id)
        parts: list[str] = []
        added: list[ArchivedRecord] = []
        for i in indices:
            if i in known:
                continue
            text = message_text(messages[i])
            role = messages[i].get("role", "") or "-"
            parts.append(f"{i} {role} {len(text)}\n{text}\n")
            added.append(ArchivedRecord(i, role, text))
        if not parts:
            return 0
        self._dir("archive")
        with open(self.archive_path(session_id), "a", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write("".join(parts))
        known.update(indices)
        self.unsent.setdefault(session_id, []).extend(added)
        return len(parts)

    def records(self, session_id: str) -> list[dict[str, Any]]:
        """Every archived message (``index``, ``role``, ``text``), in the order archived."""
        try:
            data = self.archive_path(session_id).read_text(encoding="utf-8", errors="surrogatepass")
        except OSError:
            return []
        records: list[dict[str, Any]] = []
        at = 0
        while at < len(data):
            newline = data.find("\n", at)
            header = data[at:newline].split(" ") if newline >= 0 else []
            if len(header) != 3 or not header[0].isdigit() or not header[2].isdigit():
                break  # a torn or foreign tail: what follows is archived again by the next compaction
            start, length = newline + 1, int(header[2])
            if start + length > len(data):
                break
            records.append({"index": int(header[0]), "role": header[1], "text": data[start:start + length]})
            at = start + length + 1
        return records

    def search(self, session_id: str, query: str, k: int = 5) -> list[Found]:
        """Archived messages of the session ranked by how many query words they contain (then how often),
        newest first on ties; a hit's text is the whole archived message."""
        words = {w.lower() for w in _WORD.findall(query)}
        if not words:
            return []
        best: dict[int, Found] = {}
        for record in self.records(session_id):
            text = str(record.get("text", ""))
            lower = text.lower()
            present = [w for w in words if w in lower]
            if not present:
                continue
            score = len(present) + min(sum(lower.count(w) for w in present), 50) / 100
            best[record["index"]] = Found(record["index"], str(record.get("role", "")), text, score)
        ranked = sorted(best.values(), key=lambda f: (-f.score, -f.index))
        return ranked[:k]
