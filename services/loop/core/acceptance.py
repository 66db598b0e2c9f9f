"""``AcceptanceItem``: a statement and the shell command that proves it, and the two fixed
acceptance sources (none; a fixed list). Plain data, no imports:
ports and the turn policy use it too)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


class NoAcceptance:
    """An ``AcceptanceSource`` without items (a subagent child: its parent's gate checks the work)."""

    def items(self) -> list[AcceptanceItem]:
        return []

    def record(self, verdicts: Mapping[str, bool]) -> None:
        return None


class FixedAcceptance:
    """An ``AcceptanceSource`` over a fixed list (a plan step: its item's ``verify``)."""

    def __init__(self, items: Iterable[AcceptanceItem]) -> None:
        self._items = list(items)
        self.verdicts: list[bool] = []
        """Every verdict given, in order (a receipt's grade reads them)."""

    def items(self) -> list[AcceptanceItem]:
        return self._items

    def record(self, verdicts: Mapping[str, bool]) -> None:
        self.verdicts.extend(verdicts.values())
        for item in self._items:
            if item.id in verdicts:
                item.last_passed = verdicts[item.id]
