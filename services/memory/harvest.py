"""Harvest: the extractor prompt the loop sends and the one tolerant candidate parser.

The loop sends the turn's new messages with EXTRACTOR_PROMPT to one model call
and passes the answer to :func:`parse_candidates`. The parser is the only way
an answer becomes candidates: a malformed or truncated answer yields nothing
(never a note made of JSON debris).
"""

from __future__ import annotations

import json
import re
from typing import Any

from services.memory.gates import is_plausible_note_text
from services.memory.model import Action, Candidate

EXTRACTOR_PROMPT = """You maintain the long-term memory of a coding agent for one workspace.
Read the conversation excerpt below (only this turn's new messages) and extract durable knowledge
worth remembering in later sessions: facts about the project, decisions and their reasons, user
preferences, conventions, lessons from failures, and open threads the user explicitly left for later.

Do not extract: task progress ("next step", "done", "currently editing"), temporary paths, tool
output dumps, guesses, or anything only true for this turn. Write each note as one self-contained
sentence in the language of the conversation. Fewer, sharper notes beat many vague ones; an empty
list is a fine answer.

Answer with a JSON array only (no prose), each element:
{"text": "...", "kind": "fact|decision|preference|convention|lesson|open_thread",
 "importance": 1-5, "action": "ADD|UPDATE|SUPERSEDE|NOOP", "target_id": "<id of the note it
 updates or supersedes, else empty>", "scene": "<optional short topic label, at most 12 characters>"}

Scene labels already in use (reuse one when it fits instead of inventing a new spelling):
{known_scenes}

Existing notes that may be updated or superseded (id: text):
{existing_notes}
"""

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_ACTIONS = {a.name: a for a in Action if a is not Action.UNSPECIFIED}


def _load(text: str) -> Any:
    body = text.strip()
    fenced = _FENCE.search(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        return json.loads(body)
    except ValueError:
        pass
    start, end = body.find("["), body.rfind("]")
    if 0 <= start < end:
        try:
            return json.loads(body[start : end + 1])
        except ValueError:
            return None
    return None


def _text_field(item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    return value if isinstance(value, str) else ""


def _candidate(item: Any) -> Candidate | None:
    if not isinstance(item, dict) or not isinstance(item.get("text"), str):
        return None
    text = " ".join(item["text"].split())
    if not is_plausible_note_text(text):
        return None
    try:
        importance = int(item.get("importance", 3))
    except (TypeError, ValueError):
        importance = 3
    action = _ACTIONS.get(str(item.get("action", "")).strip().upper(), Action.UNSPECIFIED)
    kind, scene, target = (_text_field(item, key) for key in ("kind", "scene", "target_id"))
    return Candidate(
        text=text, kind=kind or "fact", importance=min(max(importance, 1), 5), action=action,
        target_id=target, scene=scene,
    )


def parse_candidates(text: str) -> list[Candidate]:
    """Candidates from an extractor answer; anything malformed yields an empty list."""
    data = _load(text)
    if isinstance(data, dict):
        data = data.get("candidates", data.get("notes"))
    if not isinstance(data, list):
        return []
    return [c for c in (_candidate(item) for item in data) if c is not None]


def render_existing(notes: list[tuple[str, str]], limit: int = 40) -> str:
    """The ``{existing_notes}`` part of the prompt: ``id: text`` lines (most recent ``limit``)."""
    lines = [f"{note_id}: {text}" for note_id, text in notes[-limit:]]
    return "\n".join(lines) if lines else "(none)"


def extractor_prompt(existing: list[tuple[str, str]], scenes: list[str] | None = None) -> str:
    """EXTRACTOR_PROMPT with the existing notes and the governed scene labels filled in.

    Pass ``sorted(governed_scenes(...))`` as ``scenes``: offering the labels that
    already group notes keeps the extractor from spelling one topic three ways.
    """
    known = ", ".join(scenes) if scenes else "(none)"
    return EXTRACTOR_PROMPT.replace("{known_scenes}", known).replace("{existing_notes}", render_existing(existing))
