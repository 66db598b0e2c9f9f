"""The model-facing tools ``memory_search`` and ``memory_write`` (OpenAI function schemas)."""

from __future__ import annotations

from typing import Any

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
