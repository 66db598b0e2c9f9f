"""The model-facing tools ``memory_search`` and ``memory_write`` (OpenAI function schemas)."""

from __future__ import annotations

from typing import Any

from services.memory.model import KINDS, Action, Candidate, RecallQuery

MEMORY_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "memory_search",
        "description": (
            "Search long-term memory notes of this workspace (facts, decisions, preferences, open threads). "
            "Returns id, kind, score, relevance and matched_terms per note. On a miss the result says which "
            "query words the index knows, near misses and what the memory holds; rephrase with the memory's "
            "own words. Filters (kind, evidence, scope, scene, since_days) narrow candidates before ranking. "
            "terms_known / terms_unknown are measured against the whole index, not only the filtered notes."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for, in the words a note would use."},
                "k": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Max notes (default 5)."},
                "kind": {
                    "type": "string",
                    "description": "Only this kind: fact, decision, preference, convention, lesson, open_thread.",
                },
                "evidence": {"type": "string", "enum": ["tool", "model", ""], "description": "Only notes with this evidence."},
                "scope": {"type": "string", "description": "Exact scope (notes written here are all 'workspace')."},
                "scene": {"type": "string", "description": "Exact topic label; narrows candidates, is not a query."},
                "since_days": {"type": "number", "description": "Only notes updated within this many days (0 = any)."},
                "include_near_misses": {"type": "boolean", "description": "Also list near misses on a hit."},
            },
            "required": ["query"],
        },
    },
}

MEMORY_WRITE_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "memory_write",
        "description": (
            "Write one durable note to long-term memory (a fact, decision, preference, convention or lesson "
            "that stays true across sessions). Not for task progress or temporary paths: those are refused. "
            "A near-duplicate of an existing note updates it instead of adding another."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "One self-contained sentence."},
                "kind": {
                    "type": "string",
                    "enum": ["fact", "decision", "preference", "convention", "lesson", "open_thread"],
                },
                "importance": {"type": "integer", "minimum": 1, "maximum": 5, "description": "Default 3."},
                "scene": {"type": "string", "description": "Optional short topic label (<= 12 characters)."},
                "action": {"type": "string", "enum": ["ADD", "UPDATE", "SUPERSEDE"], "description": "Default ADD."},
                "target_id": {"type": "string", "description": "The note an UPDATE or SUPERSEDE replaces."},
            },
            "required": ["text"],
        },
    },
}

HISTORY_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "history_search",
        "description": (
            "Search earlier messages of the conversation that were compacted out of the context. Returns "
            "message references (session, index, role) with their text, best match first."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words the earlier message would contain."},
                "k": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Max messages (default 5)."},
                "all_sessions": {"type": "boolean", "description": "Search every session, not only this one."},
            },
            "required": ["query"],
        },
    },
}


class ToolArgumentError(ValueError):
    """A memory tool call's arguments are unusable; the message says what to send instead."""


def _text_arg(args: dict[str, Any], key: str) -> str:
    value = args.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ToolArgumentError(f"`{key}` must be a string")
    return value.strip()


def parse_search_args(args: dict[str, Any]) -> RecallQuery:
    """Validated memory_search arguments (k clamped to 1..20, since_days >= 0)."""
    query = _text_arg(args, "query")
    if not query:
        raise ToolArgumentError("`query` is required: the words a note would contain")
    k, since = args.get("k", 5), args.get("since_days", 0)
    if not isinstance(k, int) or isinstance(k, bool):
        raise ToolArgumentError("`k` must be an integer between 1 and 20")
    if not isinstance(since, (int, float)) or isinstance(since, bool):
        raise ToolArgumentError("`since_days` must be a number of days (0 = any age)")
    return RecallQuery(
        query=query, k=min(max(k, 1), 20), kind=_text_arg(args, "kind"), evidence=_text_arg(args, "evidence"),
        scope=_text_arg(args, "scope"), scene=_text_arg(args, "scene"), since_days=max(float(since), 0.0),
        include_near_misses=bool(args.get("include_near_misses", False)),
    )


def parse_write_args(args: dict[str, Any]) -> Candidate:
    """Validated memory_write arguments as a candidate with evidence "model"."""
    text = _text_arg(args, "text")
    if not text:
        raise ToolArgumentError("`text` is required: one self-contained sentence to remember")
    importance = args.get("importance", 3)
    if not isinstance(importance, int) or isinstance(importance, bool):
        raise ToolArgumentError("`importance` must be an integer from 1 to 5")
    action_name = _text_arg(args, "action").upper() or "ADD"
    if action_name not in ("ADD", "UPDATE", "SUPERSEDE"):
        raise ToolArgumentError("`action` must be ADD, UPDATE or SUPERSEDE")
    target = _text_arg(args, "target_id")
    if action_name != "ADD" and not target:
        raise ToolArgumentError(f"`target_id` is required with action {action_name}: the id of the note it replaces")
    kind = _text_arg(args, "kind") or "fact"
    if kind not in KINDS:
        raise ToolArgumentError(f"`kind` must be one of {', '.join(KINDS)}, not {kind!r}")
    return Candidate(
        text=text, kind=kind, importance=min(max(importance, 1), 5),
        action=Action[action_name], target_id=target, scene=_text_arg(args, "scene"), evidence="model",
    )
