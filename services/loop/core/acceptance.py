"""``AcceptanceItem``: a statement and the shell command that proves it (plain data, no imports:
ports and the turn policy use it too)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SOURCES = ("user", "config", "plan", "model")


@dataclass
class AcceptanceItem:
    """One statement and its proof."""

    id: str
    statement: str
    command: str
    source: str = "user"
    last_passed: bool | None = None
    """The last verdict (None: never checked); shown by /accept, never trusted by the gate."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "statement": self.statement, "command": self.command,
                               "source": self.source}
        if self.last_passed is not None:
            out["lastPassed"] = self.last_passed
        return out

    @classmethod
    def from_json(cls, raw: Any) -> AcceptanceItem | None:
        """Tolerant reader: None for an entry without an id or a command."""
        if not isinstance(raw, Mapping):
            return None
        item_id, command = str(raw.get("id") or "").strip(), str(raw.get("command") or "").strip()
        if not item_id or not command:
            return None
        last = raw.get("lastPassed")
        source = str(raw.get("source") or "user")
        return cls(item_id, str(raw.get("statement") or command), command, source if source in SOURCES else "user",
                   last if isinstance(last, bool) else None)
