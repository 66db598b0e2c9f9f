"""The model-facing tools ``memory_search`` and ``memory_write`` (OpenAI function schemas)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from services.kernel.tool_args import ArgumentError, arg, parse_args, schema_of
from services.memory.model import Action, Candidate, RecallQuery

Evidence = Literal["tool", "model", ""]
Kind = Literal["fact", "decision", "preference", "open_thread", "convention", "lesson"]
"""model.KINDS as a type (a unit test keeps the two equal)."""


@dataclass(frozen=True)
class MemorySearchArgs:
    """``memory_search``'s arguments (their schema is what the model is sent)."""

    query: str = arg("What to look for, in the words a note would use.")
    k: int = arg("Max notes, 1-20 (default 5).", 5)
    kind: str | None = arg("Only this kind: fact, decision, preference, convention, lesson, open_thread.", None)
    evidence: Evidence | None = arg("Only notes with this evidence.", None)
    scope: str | None = arg("Exact scope (notes written here are all 'workspace').", None)
    scene: str | None = arg("Exact topic label; narrows candidates, is not a query.", None)
    since_days: float = arg("Only notes updated within this many days (0 = any).", 0.0)
    include_near_misses: bool = arg("Also list near misses on a hit.", False)


@dataclass(frozen=True)
class MemoryWriteArgs:
    """``memory_write``'s arguments."""

    text: str = arg("One self-contained sentence.")
    kind: Kind | None = None
    importance: int = arg("1-5, default 3.", 3)
    scene: str | None = arg("Optional short topic label (<= 12 characters).", None)
    action: str | None = arg("ADD (default), UPDATE or SUPERSEDE.", None)
    target_id: str | None = arg("The note an UPDATE or SUPERSEDE replaces.", None)


MEMORY_SEARCH_DESCRIPTION = (
    "Search long-term memory notes of this workspace (facts, decisions, preferences, open threads). "
    "Returns id, kind, score, relevance and matched_terms per note. On a miss the result says which "
    "query words the index knows, near misses and what the memory holds; rephrase with the memory's "
    "own words. Filters (kind, evidence, scope, scene, since_days) narrow candidates before ranking. "
    "terms_known / terms_unknown are measured against the whole index, not only the filtered notes."
)
MEMORY_WRITE_DESCRIPTION = (
    "Write one durable note to long-term memory (a fact, decision, preference, convention or lesson "
    "that stays true across sessions). Not for task progress or temporary paths: those are refused. "
    "A near-duplicate of an existing note updates it instead of adding another."
)
MEMORY_SEARCH_SCHEMA: dict[str, Any] = {"type": "function", "function": {
    "name": "memory_search", "description": MEMORY_SEARCH_DESCRIPTION, "parameters": schema_of(MemorySearchArgs)}}
MEMORY_WRITE_SCHEMA: dict[str, Any] = {"type": "function", "function": {
    "name": "memory_write", "description": MEMORY_WRITE_DESCRIPTION, "parameters": schema_of(MemoryWriteArgs)}}

ToolArgumentError = ArgumentError
"""A memory tool call's arguments are unusable; the message says what to send instead."""


def parse_search_args(raw: dict[str, Any]) -> RecallQuery:
    """Validated memory_search arguments (k clamped to 1..20, since_days >= 0)."""
    args = parse_args(MemorySearchArgs, raw)
    query = args.query.strip()
    if not query:
        raise ArgumentError("`query` is required: the words a note would contain")
    return RecallQuery(
        query=query, k=min(max(args.k, 1), 20), kind=(args.kind or "").strip(), evidence=args.evidence or "",
        scope=(args.scope or "").strip(), scene=(args.scene or "").strip(), since_days=max(args.since_days, 0.0),
        include_near_misses=args.include_near_misses,
    )


def parse_write_args(raw: dict[str, Any]) -> Candidate:
    """Validated memory_write arguments as a candidate with evidence "model"."""
    args = parse_args(MemoryWriteArgs, raw)
    text = args.text.strip()
    if not text:
        raise ArgumentError("`text` is required: one self-contained sentence to remember")
    action_name = (args.action or "").strip().upper() or "ADD"
    if action_name not in ("ADD", "UPDATE", "SUPERSEDE"):
        raise ArgumentError("`action` must be ADD, UPDATE or SUPERSEDE")
    target = (args.target_id or "").strip()
    if action_name != "ADD" and not target:
        raise ArgumentError(f"`target_id` is required with action {action_name}: the id of the note it replaces")
    return Candidate(
        text=text, kind=args.kind or "fact", importance=min(max(args.importance, 1), 5),
        action=Action[action_name], target_id=target, scene=(args.scene or "").strip(), evidence="model",
    )
