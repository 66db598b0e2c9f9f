"""Plain domain types of the memory service (protobuf never reaches past convert.py)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

KINDS: tuple[str, ...] = ("fact", "decision", "preference", "open_thread", "convention", "lesson")
"""Known note kinds; any other non-empty kind is stored as written."""


class Action(enum.Enum):
    """What reconcile did (or was asked to do) with one candidate."""

    UNSPECIFIED = 0
    ADD = 1
    UPDATE = 2
    SUPERSEDE = 3
    NOOP = 4


@dataclass
class Note:
    """One long-term note as stored."""

    id: str
    text: str
    kind: str = "fact"
    importance: int = 3
    pinned: bool = False
    scene: str = ""
    evidence: str = ""
    scope: str = "workspace"
    source_message_ids: list[str] = field(default_factory=list)
    hits: int = 0
    last_used: float = 0.0
    created: float = 0.0
    updated: float = 0.0


@dataclass
class Candidate:
    """A note proposed by the harvest extractor or by ``memory_write``."""

    text: str
    kind: str = "fact"
    importance: int = 3
    action: Action = Action.UNSPECIFIED
    target_id: str = ""
    scene: str = ""
    evidence: str = ""
    source_message_ids: list[str] = field(default_factory=list)
    pinned: bool = False
    scope: str = "workspace"


@dataclass
class Outcome:
    """The result of reconciling one candidate."""

    action: Action
    note: Note | None = None
    rejected_reason: str = ""


@dataclass
class RecallQuery:
    """One recall request after defaults are applied."""

    query: str
    k: int = 5
    kind: str = ""
    evidence: str = ""
    scope: str = ""
    scene: str = ""
    since_days: float = 0.0
    include_near_misses: bool = False
    timeout_seconds: float = 0.0
    skip_hit_count: bool = False


@dataclass
class Hit:
    """One returned note with its scores."""

    note: Note
    score: float
    relevance: float
    matched_terms: list[str]


@dataclass
class RecallResult:
    """Hits plus the diagnostics dict the tool payload carries."""

    hits: list[Hit]
    diagnostics: dict[str, object]
    rendered: str


@dataclass
class ConsolidateReport:
    """Counts of what one consolidate pass changed."""

    merged: int = 0
    promoted: int = 0
    expired: int = 0
    evicted: int = 0


@dataclass
class ArchivedMessage:
    """A message that left the context, kept for history_search."""

    session_id: str
    index: int
    role: str
    text: str
